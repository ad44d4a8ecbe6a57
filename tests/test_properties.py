"""Whole games with seeded uniformly random legal actions, under every rules preset and
under random rule switches, checked against the invariants of the rules (docs/rules.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barbu_env.game.cards import FULL_DECK
from barbu_env.game.constants import NUM_CONTRACTS
from barbu_env.game.engine import (
    CONTRACT_NAMES,
    NUM_HANDS,
    BarbuState,
    Contract,
    Phase,
    contract_total,
)
from barbu_env.game.rules import Rules, load_rules, preset_names

GAMES_PER_PRESET = 50
DEFAULT_POINTS = {k: v for k, v in Rules().to_dict().items() if k.endswith(("_points", "_scores"))}
_DOUBLE, _GAME_OVER = Phase.DOUBLE, Phase.GAME_OVER
_BATCH = 4096
#: More decisions than any game can take (a hand takes at most 7 + 4 + 52 * 4 turns).
MAX_DECISIONS = NUM_HANDS * (7 + 4 + 52 * 4)


def assert_deal_is_a_deck(dealt) -> None:
    assert len(dealt) == 4
    assert [h.bit_count() for h in dealt] == [13, 13, 13, 13]
    assert dealt[0] | dealt[1] | dealt[2] | dealt[3] == FULL_DECK  # 52 distinct cards


def play_random_game(rules: Rules, seed: int):
    """A whole game with uniformly random legal actions; returns the final state and
    doubles[p][d], how often p named declarer d on p's own doubling turn."""
    state = BarbuState.new_game(rules=rules, rng=np.random.default_rng(seed))
    chooser = np.random.default_rng([seed, 1])
    uniforms, i = chooser.random(_BATCH).tolist(), 0
    doubles = [[0] * 4 for _ in range(4)]
    legal_mask, apply_action = state.legal_mask, state.apply_action
    assert_deal_is_a_deck(state.dealt)
    for _ in range(MAX_DECISIONS):
        if state.phase is _GAME_OVER:
            break
        mask = legal_mask()
        assert mask, f"empty mask in phase {state.phase.name}, hand {state.hand_number}"
        # The k-th set bit, k uniform over the legal actions.
        k = int(uniforms[i] * mask.bit_count())
        i += 1
        if i == _BATCH:
            uniforms, i = chooser.random(_BATCH).tolist(), 0
        for _ in range(k):
            mask &= mask - 1
        action = (mask & -mask).bit_length() - 1
        if state.phase is _DOUBLE:
            seat, declarer = state.current_player, state.declarer
            if seat != declarer and (action - 76) >> ((declarer - seat - 1) % 4) & 1:
                doubles[seat][declarer] += 1
        if apply_action(action) is not None and state.phase is not _GAME_OVER:
            assert_deal_is_a_deck(state.dealt)
    assert state.phase is _GAME_OVER, f"seed {seed}: the game did not end within {MAX_DECISIONS} decisions"
    return state, doubles


def check_game(rules: Rules, first_declarer: int, state: BarbuState, doubles) -> None:
    assert state.is_terminal and state.current_player == -1
    results = state.results
    assert [r.hand for r in results] == list(range(NUM_HANDS))
    for r in results:
        contract = CONTRACT_NAMES.index(r.contract)
        # Raw scores sum to the contract's total; the side bets are zero-sum.
        assert sum(r.raw) == contract_total(rules, contract), r
        assert sum(r.settled) == sum(r.raw), r
        # Every pair's level is 0, 1 or 2, symmetric, nobody doubles themself.
        assert all(r.levels[i][j] in (0, 1, 2) and r.levels[i][j] == r.levels[j][i] for i in range(4) for j in range(4))
        assert all(r.levels[i][i] == 0 for i in range(4))
        if contract >= Contract.TRUMPS or rules.doubling_targets == "declarer_only":
            # Only the declarer may be doubled: no side bet between two other players.
            assert all(r.levels[i][j] == 0 for i in range(4) for j in range(4) if r.declarer not in (i, j)), r
        if contract == Contract.TRUMPS:
            assert list(r.raw) == [rules.trumps_points * t for t in r.tricks]
        elif contract == Contract.NO_TRICKS:
            assert list(r.raw) == [rules.no_tricks_points * t for t in r.tricks]
        elif contract == Contract.DOMINO:
            assert len(r.out_order) == 3 and sum(r.tricks) == 0
            order = list(r.out_order) + [p for p in range(4) if p not in r.out_order]
            assert [r.raw[p] for p in order] == list(rules.domino_scores)
        if contract not in (Contract.DOMINO, Contract.NO_QUEENS, Contract.NO_KING_OF_HEARTS) and not (
            contract == Contract.NO_HEARTS and rules.end_no_hearts_early
        ):
            assert sum(r.tricks) == 13
    # Declarers follow the rotation; each declares each contract exactly once.
    if rules.rotation == "every_hand":
        expected = [(first_declarer + h) % 4 for h in range(NUM_HANDS)]
    else:
        expected = [(first_declarer + h // 7) % 4 for h in range(NUM_HANDS)]
    assert [r.declarer for r in results] == expected
    assert {(r.declarer, r.contract) for r in results} == {(d, c) for d in range(4) for c in CONTRACT_NAMES}
    # Every player doubled every other declarer at least min_declarer_doubles times.
    for p in range(4):
        for d in range(4):
            if p != d:
                assert doubles[p][d] >= rules.min_declarer_doubles, (p, d, doubles)
    # The game totals are the settled hand scores; they sum to the contract totals.
    assert state.scores == [sum(r.settled[p] for r in results) for p in range(4)]
    game_total = 4 * sum(contract_total(rules, c) for c in range(NUM_CONTRACTS))
    assert sum(state.scores) == game_total
    if {k: v for k, v in rules.to_dict().items() if k in DEFAULT_POINTS} == DEFAULT_POINTS:
        assert game_total == 0


@pytest.mark.parametrize("preset", preset_names())
def test_random_games_keep_every_invariant(preset):
    rules = load_rules(preset)
    for seed in range(GAMES_PER_PRESET):
        state, doubles = play_random_game(rules, seed)
        check_game(rules, state.first_declarer, state, doubles)


def test_declarer_only_preset_totals_still_balance_with_its_changed_points():
    rules = load_rules("declarer_only")
    assert rules.no_last_two_points != Rules().no_last_two_points
    assert 4 * sum(contract_total(rules, c) for c in range(NUM_CONTRACTS)) == 0


def test_the_same_seed_plays_the_same_game():
    a, _ = play_random_game(Rules(), 11)
    b, _ = play_random_game(Rules(), 11)
    c, _ = play_random_game(Rules(), 12)
    assert a.history == b.history and a.scores == b.scores
    assert [r.dealt for r in a.results] == [r.dealt for r in b.results]
    assert a.results[0].dealt != c.results[0].dealt  # the seed deals the cards
    assert a.history != c.history


points = st.integers(-40, 40)
rule_switches = st.fixed_dictionaries(
    {
        "rotation": st.sampled_from(["seven_in_a_row", "every_hand"]),
        "trumps_must_overtrump": st.booleans(),
        "trumps_must_ruff": st.booleans(),
        "barbu_king_first_chance": st.booleans(),
        "end_no_hearts_early": st.booleans(),
        "end_no_queens_early": st.booleans(),
        "end_barbu_early": st.booleans(),
        "doubling_targets": st.sampled_from(["anyone", "declarer_only"]),
        "redouble_pass": st.booleans(),
        "min_declarer_doubles": st.integers(0, 7),
        "no_tricks_points": points,
        "no_hearts_points": points,
        "no_hearts_ace_points": points,
        "no_queens_points": points,
        "barbu_points": points,
        "no_last_two_points": st.tuples(points, points),
        "trumps_points": points,
        "domino_scores": st.tuples(points, points, points, points),
    }
)


@settings(max_examples=40, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(switches=rule_switches, seed=st.integers(0, 2**32 - 1))
def test_any_rules_and_seed_play_to_the_end_with_the_invariants(switches, seed):
    rules = Rules.from_mapping(switches)
    state, doubles = play_random_game(rules, seed)
    check_game(rules, state.first_declarer, state, doubles)
