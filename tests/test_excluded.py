"""The ``excluded`` observation slice: the cards the rules have shown a player does not
hold. Scripted deals for each kind of inference, and, over seeded random games under
combinations of the switches that shape them, the slice against its definition: a
card is excluded from a player exactly when holding it would have made one of the
player's earlier plays (or passes) this hand illegal."""

from __future__ import annotations

import numpy as np
import pytest
from scripted import deal, new_game, play, start

from barbu_env.game.cards import FULL_DECK, hand_text, mask_of
from barbu_env.game.engine import BarbuState, Phase
from barbu_env.game.observation import card_set, decode

TRUMPS_DEAL = deal(
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "QS AS 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
    "4S KS KD AD 2H 3H 4H 5H 6H 7H 8H 9H TH",
    "2S 3S 5S 6S 7S 8S 9S TS JS JH QH KH AH",
)
SUIT = {s: mask_of(f"{r}{s}" for r in "23456789TJQKA") for s in "CDHS"}


def excluded(state: BarbuState, seat: int) -> str:
    """The cards seat ``seat`` is known not to hold, as text, read from seat 0's observation."""
    rows = decode(state.observe(0))["excluded"]
    return hand_text(card_set(rows[seat]))


def test_a_discard_excludes_the_whole_led_suit():
    s = new_game(TRUMPS_DEAL)
    start(s, "no_tricks")
    play(s, "2C 2D")
    assert excluded(s, 1) == hand_text(SUIT["C"])
    assert excluded(s, 0) == excluded(s, 2) == excluded(s, 3) == ""


@pytest.mark.parametrize("overtrump", [True, False])
@pytest.mark.parametrize("ruff", [True, False])
def test_ruffing_and_overtrumping_reveal_only_the_void(overtrump, ruff):
    s = new_game(TRUMPS_DEAL, rules={"trumps_must_overtrump": overtrump, "trumps_must_ruff": ruff})
    start(s, "trumps", trump="S")
    play(s, "2C QS KS")  # seat 1 ruffs, seat 2 overtrumps: both are void in clubs, nothing more
    assert excluded(s, 1) == excluded(s, 2) == hand_text(SUIT["C"])


@pytest.mark.parametrize("overtrump", [True, False])
def test_a_trump_played_under_the_trick_shows_no_higher_trump_when_overtrumping_is_required(overtrump):
    s = new_game(TRUMPS_DEAL, rules={"trumps_must_overtrump": overtrump, "trumps_must_ruff": True})
    start(s, "trumps", trump="S")
    play(s, "2C QS KS 2S")
    higher = "AS" if overtrump else ""  # AS is the only spade above KS
    assert excluded(s, 3) == " ".join(t for t in (hand_text(SUIT["C"]), higher) if t)


@pytest.mark.parametrize("ruff", [True, False])
def test_a_discard_instead_of_a_ruff_shows_no_trump_when_ruffing_is_required(ruff):
    # Seat 1 is void in hearts and holds spades (QS AS): with the ruff switch, a heart lead
    # it discards a diamond to would be illegal, so the discard happens only without it.
    dealt = deal(
        "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    )
    s = new_game(dealt, rules={"trumps_must_overtrump": False, "trumps_must_ruff": ruff})
    start(s, "trumps", trump="S")
    play(s, "2H 2D")  # seat 1 holds no spade at all: any card is legal, and it discards
    shown = SUIT["H"] | (SUIT["S"] if ruff else 0)
    assert excluded(s, 1) == hand_text(shown)


def test_a_heart_lead_in_no_hearts_shows_a_hand_of_hearts_only():
    dealt = deal(
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    )
    s = new_game(dealt, first_declarer=2)
    start(s, "no_hearts")
    play(s, "2H")
    assert excluded(s, 2) == hand_text(FULL_DECK & ~SUIT["H"])


@pytest.mark.parametrize("first_chance", [True, False])
def test_barbu_king_rule_shows_who_does_not_hold_the_king_of_hearts(first_chance):
    s = new_game(TRUMPS_DEAL, rules={"barbu_king_first_chance": first_chance})
    start(s, "no_king_of_hearts")
    play(s, "2C 2D")  # seat 1, void in clubs, discards 2D: it would have had to play K♥
    assert excluded(s, 1) == hand_text(SUIT["C"] | (mask_of(["KH"]) if first_chance else 0))


def test_a_domino_pass_excludes_every_card_that_could_have_been_placed():
    dealt = deal(
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "2D 3D 4D 5D 6D 8D 9D TD JD QD KD AD 2H",
        "7D 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    )
    s = new_game(dealt)
    start(s, "domino", rank="7")
    play(s, "7C")
    assert excluded(s, 1) == ""
    play(s, "--")  # seat 1 holds none of 6C 8C 7D 7H 7S
    assert excluded(s, 1) == "6C 8C 7D 7H 7S"
    play(s, "7D")  # seat 2 places a card: nothing learnt
    assert excluded(s, 2) == ""


# ---------------------------------------------------------------------- the definition


def _would_be_illegal(state: BarbuState, action: int, extra: int) -> bool:
    """Whether ``action`` would be illegal for the seat to act if it also held ``extra``."""
    probe = state.clone()
    hands = probe.hands
    hands[probe.current_player] |= 1 << extra
    probe.hands = hands
    return not (probe.legal_mask() >> action) & 1


def _revealed_by_definition(state: BarbuState, action: int) -> int:
    seat = state.current_player
    held = state.hands[seat]
    out = 0
    for card in range(52):
        if not (held >> card) & 1 and _would_be_illegal(state, action, card):
            out |= 1 << card
    return out


#: Each switch on and off, each pair of switches in all four combinations (pairwise coverage).
SWITCHES = [
    {"trumps_must_overtrump": o, "trumps_must_ruff": r, "barbu_king_first_chance": k}
    for o, r, k in [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]
]


@pytest.mark.parametrize("rules", SWITCHES, ids=lambda r: "-".join(f"{k[:12]}={int(v)}" for k, v in r.items()))
def test_excluded_is_exactly_what_the_plays_revealed(rules):
    rng = np.random.default_rng(7)
    s = BarbuState.new_game(rules=rules, rng=np.random.default_rng(3))
    revealed = [0, 0, 0, 0]  # built here from the definition, hand by hand
    hand = s.hand_number
    checked = 0
    while not s.is_terminal and s.hand_number < 7:
        if s.hand_number != hand:
            revealed, hand = [0, 0, 0, 0], s.hand_number
        legal = s.legal_actions()
        action = int(rng.choice(legal))
        if s.phase in (Phase.TRICKS, Phase.DOMINO):
            seat = s.current_player
            revealed[seat] |= _revealed_by_definition(s, action)
            s.apply_action(action)
            if s.hand_number == hand:
                assert s.excluded == revealed, (s.hand_number, seat, action)
                for p in range(4):  # and never a card the player holds
                    assert s.excluded[p] & s.hands[p] == 0
                checked += 1
        else:
            s.apply_action(action)
    assert checked > 200
