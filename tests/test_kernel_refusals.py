"""Why an action is refused (``BarbuState.refusal``, the kernels' ``refusal``): on random
positions of whole games under every preset and with the switches flipped (every declaring
and doubling turn, every fifth card played), every action's
code is ``Refusal.LEGAL`` exactly when it is legal, and each other code only where its rule
is in force and applies (the words are tests/test_refusals.py's business)."""

from __future__ import annotations

import numpy as np
import pytest

from barbu_env.game import _kernels as K
from barbu_env.game.actions import DOUBLE_OFFSET, NUM_ACTIONS, PASS_ACTION
from barbu_env.game.cards import HEARTS_MASK, KING_OF_HEARTS, SUIT_MASK
from barbu_env.game.constants import Contract, Phase, Refusal
from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import Rules, load_rules, preset_names

#: The presets, and rules flipping the switches that decide legality away from them.
RULESETS = {name: load_rules(name) for name in preset_names()} | {
    "loose": Rules(trumps_must_overtrump=False, trumps_must_ruff=False, min_declarer_doubles=0),
    "strict": Rules(
        trumps_must_overtrump=True,
        trumps_must_ruff=True,
        barbu_king_first_chance=True,
        doubling_targets="declarer_only",
        redouble_pass=True,
        min_declarer_doubles=3,
        rotation="every_hand",
    ),
    "ruff_only": Rules(trumps_must_overtrump=False, trumps_must_ruff=True, redouble_pass=True, min_declarer_doubles=7),
}


def _check_reason(state: BarbuState, rules: Rules, action: int, code: Refusal) -> None:
    """``code`` (not LEGAL) is a reason that holds for ``action`` in ``state``."""
    seat, phase, contract = state.current_player, state.phase, state.contract
    hand = state.hands[seat]
    where = f"{code.name} for {action} in {phase.name} {contract!r} (hand {state.hand_number})"
    card_codes = {Refusal.FOLLOW_SUIT, Refusal.OVERTRUMP, Refusal.RUFF, Refusal.HEART_LEAD, Refusal.KING_FIRST}
    if code is Refusal.WRONG_PHASE:
        return
    if code is Refusal.NOT_HELD:
        assert action < 52 and not hand >> action & 1, where
    elif code in card_codes:
        assert phase is Phase.TRICKS and hand >> action & 1, where
        if code is Refusal.FOLLOW_SUIT:
            led = state.trick[state.leader] // 13
            assert hand & SUIT_MASK[led] and action // 13 != led, where
        elif code is Refusal.OVERTRUMP:
            assert contract == Contract.TRUMPS and rules.trumps_must_overtrump, where
        elif code is Refusal.RUFF:
            assert contract == Contract.TRUMPS and rules.trumps_must_ruff and action // 13 != state.trump, where
        elif code is Refusal.HEART_LEAD:
            assert contract in (Contract.NO_HEARTS, Contract.NO_KING_OF_HEARTS) and hand & ~HEARTS_MASK, where
        else:
            assert rules.barbu_king_first_chance and hand >> KING_OF_HEARTS & 1, where
    elif code in (Refusal.NOT_ON_LAYOUT, Refusal.MUST_PLACE):
        assert phase is Phase.DOMINO, where
        assert (action == PASS_ACTION) == (code is Refusal.MUST_PLACE), where
    elif code is Refusal.ALREADY_DECLARED:
        assert phase is Phase.DECLARE, where
    else:
        assert phase is Phase.DOUBLE and DOUBLE_OFFSET <= action < PASS_ACTION, where
        if code is Refusal.MUST_DOUBLE_DECLARER:
            assert rules.min_declarer_doubles > 0 and seat != state.declarer, where
        elif code is Refusal.DECLARER_REDOUBLES_ONLY:
            assert seat == state.declarer, where
        elif code is Refusal.DECLARER_ONLY_CONTRACT:
            assert contract in (Contract.TRUMPS, Contract.DOMINO), where
        elif code is Refusal.DECLARER_ONLY_RULE:
            assert rules.doubling_targets == "declarer_only", where
        else:
            assert code is Refusal.REDOUBLE_PASS_ONLY and rules.redouble_pass, where


@pytest.mark.parametrize("name", list(RULESETS))
def test_an_action_is_refused_exactly_when_it_is_illegal_and_for_a_rule_that_applies(name):
    rules = RULESETS[name]
    rng = np.random.default_rng(list(RULESETS).index(name))
    seen: set[Refusal] = set()
    codes = np.zeros(NUM_ACTIONS, dtype=np.int64)
    for _ in range(2):
        state = BarbuState.new_game(rules, rng=rng)
        decisions = 0
        while not state.is_terminal:
            legal = state.legal_mask()
            K.refusals(state._ints, state._cards, state._rp, 0, codes)
            decisions += 1
            playing = state.phase in (Phase.TRICKS, Phase.DOMINO)
            for action, code in enumerate(codes.tolist() if not playing or decisions % 5 == 0 else []):
                code = Refusal(code)
                assert (code is Refusal.LEGAL) == bool(legal >> action & 1), (name, action, code, state.phase)
                if code is not Refusal.LEGAL:
                    seen.add(code)
                    _check_reason(state, rules, action, code)
            choices = state.legal_actions()
            # Seldom a double, so that the obligation to double the declarer comes up.
            action = DOUBLE_OFFSET if DOUBLE_OFFSET in choices and rng.random() < 0.9 else int(rng.choice(choices))
            assert state.refusal(action) is Refusal.LEGAL
            state.apply_action(action)
        assert state.refusal(0) is Refusal.GAME_OVER
    # The codes of the rules in force came up.
    expected = {Refusal.WRONG_PHASE, Refusal.NOT_HELD, Refusal.FOLLOW_SUIT, Refusal.ALREADY_DECLARED}
    expected |= {Refusal.NOT_ON_LAYOUT, Refusal.MUST_PLACE, Refusal.HEART_LEAD}
    if rules.min_declarer_doubles < 7:  # (else every seat doubles the declarer every hand)
        expected.add(Refusal.DECLARER_REDOUBLES_ONLY)
    expected |= {
        Refusal.DECLARER_ONLY_RULE if rules.doubling_targets == "declarer_only" else Refusal.DECLARER_ONLY_CONTRACT
    }
    if rules.trumps_must_overtrump:
        expected.add(Refusal.OVERTRUMP)
    if rules.trumps_must_ruff:
        expected.add(Refusal.RUFF)
    if rules.min_declarer_doubles:
        expected.add(Refusal.MUST_DOUBLE_DECLARER)
    if rules.barbu_king_first_chance:
        expected.add(Refusal.KING_FIRST)
    if rules.redouble_pass and rules.doubling_targets == "anyone":  # (else no pass turn ever comes)
        expected.add(Refusal.REDOUBLE_PASS_ONLY)
    assert expected <= seen, (name, expected - seen)
