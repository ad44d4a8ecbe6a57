"""The ``heuristic`` baseline: always legal, deterministic, sensible in clear positions,
and clearly better than random."""

import numpy as np
import pytest

from barbu_env.agents import make_agent
from barbu_env.agents.heuristic import HeuristicAgent
from barbu_env.game.actions import mask_array
from barbu_env.game.cards import card_from_text, parse_hand
from barbu_env.game.engine import BarbuState, Contract, Phase
from barbu_env.game.rules import load_rules, preset_names

DECLARE, TRUMP, RANK, NOBODY = 52, 59, 63, 76


def observe(state: BarbuState) -> dict:
    seat = state.current_player
    return {"observation": state.observe(seat), "action_mask": mask_array(state.legal_mask())}


def play_game(lineup, rules="standard", seed=0, deals=None, first_declarer=None):
    """Play one whole game; returns (final scores, actions taken by the heuristic seats)."""
    rules = load_rules(rules)
    agents = [
        make_agent(name, seed=seed * 4 + i, **({"rules": rules} if name == "heuristic" else {}))
        for i, name in enumerate(lineup)
    ]
    state = BarbuState.new_game(rules, np.random.default_rng(seed), first_declarer=first_declarer, deals=deals)
    taken = []
    while not state.is_terminal:
        seat = state.current_player
        obs = observe(state)
        action = agents[seat].act(obs, f"player_{seat}")
        assert isinstance(action, int)
        assert obs["action_mask"][action] == 1, f"illegal action {action} by {lineup[seat]} at seat {seat}"
        if lineup[seat] == "heuristic":
            taken.append(action)
        state.apply_action(action)
    return state.scores, taken


# ---------------------------------------------------------------- legality and determinism


@pytest.mark.parametrize("preset", preset_names())
def test_always_legal_under_every_preset(preset):
    lineups = (
        ["heuristic", "random", "random", "random"],
        ["random", "heuristic", "random", "heuristic"],
        ["heuristic"] * 4,
    )
    for g, lineup in enumerate(lineups):
        _, taken = play_game(lineup, preset, seed=100 + g)
        assert len(taken) > 300


def test_deterministic_for_a_seed():
    a = play_game(["heuristic", "random", "heuristic", "random"], seed=7)
    b = play_game(["heuristic", "random", "heuristic", "random"], seed=7)
    assert a == b
    # The same observation always gets the same answer, whatever was asked before.
    state = BarbuState.new_game(rng=np.random.default_rng(5), first_declarer=0)
    obs = observe(state)
    fresh, used = HeuristicAgent(seed=1), HeuristicAgent(seed=1)
    play_game(["heuristic"] * 4, seed=9)  # unrelated work in between
    assert fresh.act(obs) == used.act(obs) == used.act(obs)


# ---------------------------------------------------------------- scripted positions


def deal(*hands: str) -> list[list[str]]:
    out = [h.split() for h in hands]
    assert parse_hand(" ".join(hands)).bit_count() == 52
    return out


def start(hands, contract: int, *, trump=None, rank=None, plays=()) -> BarbuState:
    """Seat 0 declares ``contract`` with ``hands``; nobody doubles; ``plays`` (card text)
    are then played in turn."""
    state = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0, deals=[hands])
    state.apply_action(DECLARE + contract)
    if trump is not None:
        state.apply_action(TRUMP + trump)
    if rank is not None:
        state.apply_action(RANK + rank)
    while state.phase == Phase.DOUBLE:
        state.apply_action(NOBODY)
    for c in plays:
        state.apply_action(card_from_text(c))
    return state


def heuristic_action(state: BarbuState) -> int:
    return HeuristicAgent().act(observe(state))


HANDS = deal(
    "KS 2C 3C 4C 5C 6C 2D 3D 4D 5D 6D 2H 3H",
    "AS QS 9S 3S 7C 8C 7D 8D 4H 5H 6H 7H 8H",
    "JS TS 8S 7S 6S 9C TC 9D TD 9H TH JH QH",
    "5S 4S 2S JC QC KC AC JD QD KD AD KH AH",
)


def test_no_tricks_ducks_with_the_highest_card_under_the_winner():
    # K♠ led; seat 1 holds A♠ Q♠ 9♠ 3♠: Q♠ is the highest card that loses.
    state = start(HANDS, Contract.NO_TRICKS, plays=["KS"])
    assert state.current_player == 1
    assert heuristic_action(state) == card_from_text("QS")


def test_no_queens_dumps_a_queen_when_void():
    hands = deal(
        "2C 3C 4C 5C 6C 7C 8C 9C TC 2D 3D 4D 5D",
        "QD 2S 3S 4S 5S 6S 7S 2H 3H 4H 5H 6H 7H",
        "JC QC KC AC 6D 7D 8D 9D 8S 9S 8H 9H TH",
        "TD JD KD AD TS JS QS KS AS JH QH KH AH",
    )
    state = start(hands, Contract.NO_QUEENS, plays=["9C"])
    assert heuristic_action(state) == card_from_text("QD")


def test_barbu_dumps_the_king_of_hearts_when_void():
    hands = deal(
        "2C 3C 4C 5C 6C 7C 8C 9C TC 2D 3D 4D 5D",
        "KH 2S 3S 4S 5S 6S 7S 8S 2H 3H 4H 5H 6H",
        "JC QC KC AC 6D 7D 8D 9D 9S TS 7H 8H 9H",
        "TD JD QD KD AD JS QS KS AS TH JH QH AH",
    )
    state = start(hands, Contract.NO_KING_OF_HEARTS, plays=["9C"])
    assert heuristic_action(state) == card_from_text("KH")


def test_no_hearts_dumps_the_ace_of_hearts_when_void():
    hands = deal(
        "2C 3C 4C 5C 6C 7C 8C 9C TC 2D 3D 4D 5D",
        "AH 2S 3S 4S 5S 6S 7S 8S 2H 3H 4H 5H 6H",
        "JC QC KC AC 6D 7D 8D 9D 9S TS 7H 8H 9H",
        "TD JD QD KD AD JS QS KS AS TH JH QH KH",
    )
    state = start(hands, Contract.NO_HEARTS, plays=["9C"])
    assert heuristic_action(state) == card_from_text("AH")


def test_trumps_declarer_draws_trumps_with_the_master():
    hands = deal(
        "AS KS QS JS TS 9S AC KC 2D 3D 2H 3H 4H",
        "8S 7S 6S 2C 3C 4C 5C 4D 5D 6D 5H 6H 7H",
        "5S 4S 6C 7C 8C 9C 7D 8D 9D TD 8H 9H TH",
        "3S 2S TC JC QC JD QD KD AD JH QH KH AH",
    )
    state = start(hands, Contract.TRUMPS, trump=3)
    assert heuristic_action(state) == card_from_text("AS")


def test_declares_trumps_in_its_long_strong_suit():
    hands = deal(
        "AS KS QS JS TS 9S 8S AC KC AD 2H 3H 4H",
        "7S 6S 2C 3C 4C 5C 2D 3D 4D 5D 5H 6H 7H",
        "5S 4S 6C 7C 8C 9C 6D 7D 8D 9D 8H 9H TH",
        "3S 2S TC JC QC TD JD QD KD JH QH KH AH",
    )
    state = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0, deals=[hands])
    agent = HeuristicAgent()
    assert agent.act(observe(state)) == DECLARE + Contract.TRUMPS
    state.apply_action(DECLARE + Contract.TRUMPS)
    assert agent.act(observe(state)) == TRUMP + 3  # spades


def test_domino_opens_its_own_run_rather_than_a_suit_for_others():
    # Starting rank 7: 7♣ leads on to its own 8♣ 9♣; 7♦ would only let others play.
    hands = deal(
        "7C 8C 9C 7D 2H 3H 4H 5H 2S 3S 4S 5S 6S",
        "2C 3C 4C 5C 6C 2D 3D 4D 5D 6D 6H 7H 8H",
        "TC JC QC KC AC 8D 9D TD JD 9H TH JH QH",
        "QD KD AD KH AH 7S 8S 9S TS JS QS KS AS",
    )
    state = start(hands, Contract.DOMINO, rank=5)
    assert heuristic_action(state) == card_from_text("7C")


# ---------------------------------------------------------------- strength


def duplicate_mean(n_sets: int) -> float:
    """Heuristic x1 vs random x3 on the same deals, the heuristic in each seat in turn."""
    scores = []
    for s in range(n_sets):
        rng = np.random.default_rng(10_000 + s)
        deals = [
            [sorted(int(c) for c in p[13 * i : 13 * i + 13]) for i in range(4)]
            for p in (rng.permutation(52) for _ in range(28))
        ]
        for seat in range(4):
            lineup = ["random"] * 4
            lineup[seat] = "heuristic"
            final, _ = play_game(lineup, seed=s * 4 + seat, deals=deals, first_declarer=s % 4)
            scores.append(final[seat])
    return float(np.mean(scores))


def test_clearly_beats_random():
    # Measured: +984.6 on these 40 games; the standard error over their 10 deal sets is 40, and
    # three other sets of 10 deal sets gave +953, +1016, +1029. The bar is 2.1 standard errors
    # below the measured mean: a heuristic playing a random legal move a fifth of the time
    # (+850 here) fails.
    assert duplicate_mean(10) > 900


# ---------------------------------------------------------------- heuristic-cautious


def test_cautious_variant_plays_legally_and_doubles_clearly_less_often():
    from barbu_env.evaluation.tournament import evaluate

    # The two kinds at one table, so in the same lockstep calls; evaluate raises on an illegal action.
    result = evaluate(["heuristic-cautious", "heuristic", "heuristic-cautious", "heuristic"], games=8, workers=1)
    rate = {e.label: e.doubling.double_rate for e in result.entries}
    # Measured on 200 games against three heuristics: 57% of its doubling turns against 90%.
    assert rate["heuristic"] > 0.8 and rate["heuristic-cautious"] < rate["heuristic"] - 0.2
