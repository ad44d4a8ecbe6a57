"""Five worked settlements (docs/rules.md#settlement), each as a hand actually played: a scripted deal
and play reaching exactly the stated raw scores with P0 declaring, the stated doubles
made through their action ids (76 + relative bits: 1 left, 2 opposite, 4 right), and the
settled scores of the hand compared with the expected ones."""

from __future__ import annotations

import pytest
from oracle.engine import settle
from scripted import deal, declare, new_game, play, take_turns

from barbu_env.game.engine import NUM_PLAYERS, Phase


def levels_from(pairs: dict[tuple[int, int], int]) -> list[list[int]]:
    levels = [[0] * NUM_PLAYERS for _ in range(NUM_PLAYERS)]
    for (i, j), k in pairs.items():
        levels[i][j] = levels[j][i] = k
    return levels


# ---------------------------------------------------------------------------- the five hands

NO_QUEENS = dict(
    contract="no_queens",
    # Q♠ to P3 (A♠), P3's own Q♥, Q♣ to P0 over P3's 5♣ lead, Q♦ to P2: the 4th queen ends it.
    dealt=deal(
        "QS 2H QC 2D 4C 6C 7C 8C 9C TC JC KC AC",
        "2S 3H 2C 3D 5D 6D 7D 8D 9D TD JD KD AD",
        "3S 4H 3C QD 5H 6H 7H 8H 9H TH JH KH AH",
        "AS QH 5C 4D 4S 5S 6S 7S 8S 9S TS JS KS",
    ),
    play="QS 2S 3S AS | QH 2H 3H 4H | 5C QC 2C 3C | 2D 3D QD 4D",
    doubles=[
        83,  # P1 doubles P0 (right), P2 (left), P3 (opposite)
        78,  # P2 doubles P0 (opposite)
        76,  # P3 passes
        78,  # P0 redoubles P2 (opposite)
    ],
    raw=(-6, 0, -6, -12),
    levels={(0, 1): 1, (0, 2): 2, (1, 2): 1, (1, 3): 1},
    settled=(-12, 24, -12, -24),
)

TRUMPS = dict(
    contract="trumps",
    trump="C",
    # P0 draws trumps with A♣-10♣ (5 tricks) and gives the lead to P1's A♦ (4 tricks),
    # who gives it to P2's A♥ (3 tricks), who gives the last to P3's A♠.
    dealt=deal(
        "AC KC QC JC TC 2D 3D 4D 5D 3H 4H 5H 3S",
        "2C 3C 4C AD KD QD JD 2H 6H 7H 4S 5S 6S",
        "5C 6C 7C 6D 7D 8D 9D AH KH QH 2S 7S 8S",
        "8C 9C TD 8H 9H TH JH AS 9S TS JS QS KS",
    ),
    play="""AC 2C 5C 8C | KC 3C 6C 9C | QC 4C 7C KS | JC 5S 7S QS | TC 6S 8S JS |
            2D AD 6D TD | KD 7D TS 3D | QD 8D 9S 4D | JD 9D 8H 5D |
            2H AH 9H 3H | KH TH 4H 6H | QH JH 5H 7H | 2S AS 3S 4S""",
    doubles=[
        80,  # P1 doubles P0 (right)
        76,  # P2 passes
        77,  # P3 doubles P0 (left)
        80,  # P0 redoubles P3 (right)
    ],
    raw=(25, 20, 15, 5),
    levels={(0, 1): 1, (0, 3): 2},
    settled=(70, 15, 15, -35),
)

DOMINO = dict(
    contract="domino",
    rank="A",
    # P2 plays a heart every round and is out first (round 13); P0 passes once, then is
    # out with K♠ in round 14; P3 follows with Q♠; P1, blocked behind 5♦ and Q♠, is last.
    dealt=deal(
        "KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C KS",
        "4D 3D 2D JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
        "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
        "AC AS AD KD QD JD TD 9D 8D 7D 6D 5D QS",
    ),
    play="""-- -- AH AC | KC -- KH AS | QC -- QH AD | JC -- JH KD | TC -- TH QD | 9C -- 9H JD |
            8C -- 8H TD | 7C -- 7H 9D | 6C -- 6H 8D | 5C -- 5H 7D | 4C -- 4H 6D | 3C -- 3H 5D |
            2C 4D 2H -- | KS 3D QS""",
    doubles=[
        80,  # P1 doubles P0 (right)
        78,  # P2 doubles P0 (opposite)
        77,  # P3 doubles P0 (left)
        79,  # P0 redoubles P1 (left) and P2 (opposite)
    ],
    raw=(20, -5, 45, 5),
    levels={(0, 1): 2, (0, 2): 2, (0, 3): 1},
    settled=(35, -55, 95, -10),
)

NO_HEARTS = dict(
    contract="no_hearts",
    # A♥ falls on P0's A♣; P3 discards five hearts on P1's diamonds; P0 and P1 discard
    # five on P2's spades; K♥ and Q♥ fall on P3's clubs.
    dealt=deal(
        "AC 5C 6C 2D 3D 4D 5D 6D 7H 8H 9H QH 3S",
        "7D 8D 9D TD JD QD KD AD TH JH KH AH 2S",
        "2C 4C 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
        "3C 7C 8C 9C TC JC QC KC 2H 3H 4H 5H 6H",
    ),
    play="""AC AH 2C 3C | 2D AD 4S 2H | KD 5S 3H 3D | QD 6S 4H 4D | JD 7S 5H 5D | TD 8S 6H 6D |
            2S AS 7C 3S | KS 8C 7H TH | QS 9C 8H JH | JS TC 9H 7D |
            4C KC 5C 8D | QC 6C KH 9S | JC QH 9D TS""",
    doubles=[
        81,  # P1 doubles P0 (right) and P2 (left)
        81,  # P2 redoubles P1 (right), doubles P3 (left)
        83,  # P3 redoubles P2 (right), doubles P0 (left) and P1 (opposite)
        80,  # P0 redoubles P3 (right)
    ],
    raw=(-6, -10, -10, -4),
    levels={(0, 1): 1, (0, 3): 2, (1, 2): 2, (1, 3): 1, (2, 3): 2},
    settled=(-6, -20, -22, 18),
)

BARBU = dict(
    contract="no_king_of_hearts",
    # P2's A♣ takes P3's K♥ on the first trick, which ends the hand.
    dealt=deal(
        "2C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "3C AD 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
        "AC 4C 5C 6C 7C 8C 9C TC JC QC KC AH AS",
        "KH 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
    ),
    play="2C 3C AC KH",
    doubles=[
        80,  # P1 doubles P0 (right)
        82,  # P2 doubles P0 (opposite) and P1 (right)
        76,  # P3 passes
        78,  # P0 redoubles P2 (opposite)
    ],
    raw=(0, 0, -20, 0),
    levels={(0, 1): 1, (0, 2): 2, (1, 2): 1},
    settled=(40, 20, -80, 0),
)

WORKED = {"no_queens": NO_QUEENS, "trumps": TRUMPS, "domino": DOMINO, "no_hearts": NO_HEARTS, "barbu": BARBU}


@pytest.mark.parametrize("case", WORKED.values(), ids=WORKED.keys())
def test_worked_settlement_of_a_played_hand(case):
    s = new_game(case["dealt"])
    declare(s, case["contract"], trump=case.get("trump"), rank=case.get("rank"))
    take_turns(s, case["doubles"])
    assert s.phase in (Phase.TRICKS, Phase.DOMINO)  # exactly four doubling turns
    assert s.levels() == levels_from(case["levels"])
    result = play(s, case["play"])
    assert result is not None, "the scripted play did not finish the hand"
    assert result.declarer == 0 and result.contract == case["contract"]
    assert result.raw == case["raw"]
    assert [list(row) for row in result.levels] == levels_from(case["levels"])
    assert result.settled == case["settled"]
    assert s.results == [result]
    assert s.scores == list(case["settled"])
    assert sum(result.settled) == sum(result.raw)


@pytest.mark.parametrize("case", WORKED.values(), ids=WORKED.keys())
def test_settle_applies_each_pair_level_to_the_raw_difference(case):
    assert settle(case["raw"], levels_from(case["levels"])) == list(case["settled"])


def test_settle_uses_raw_scores_never_already_settled_ones():
    # Chain 0-1 and 1-2: settling pair (1, 2) from P1's already settled -20 would leave
    # P2 at -20; from the raw scores P2 loses 10.
    raw = (0, -10, -20, 0)
    levels = levels_from({(0, 1): 1, (1, 2): 1})
    assert settle(raw, levels) == [10, -10, -30, 0]
    assert settle(raw, levels_from({})) == list(raw)
    assert settle(raw, levels_from({(0, 2): 2})) == [40, -10, -60, 0]
