"""A refused action is answered with the rule that forbids it, in the words and numbers of the
rules in force: the terminal seat (``human.parse_choice``, ``HumanAgent``) and the browser
table (``web.server.refusal``) both, for the doubling obligation (``min_declarer_doubles``),
the Trumps obligations (``trumps_must_overtrump``, ``trumps_must_ruff``) and the doubling
targets (``doubling_targets``); and every reason the kernels give has its words."""

from __future__ import annotations

import numpy as np
import pytest

from barbu_env.game.actions import AGENTS, DECLARE_OFFSET, DOUBLE_OFFSET, TRUMP_OFFSET, mask_array
from barbu_env.game.cards import SUIT_MASK, card_text, cards_of, suit_of
from barbu_env.game.constants import Refusal
from barbu_env.game.engine import BarbuState, Contract, Phase
from barbu_env.game.rules import Rules, load_rules
from barbu_env.play.terminal import ChoiceError, HumanAgent, parse_choice
from barbu_env.play.web.server import refusal
from barbu_env.view.refusals import reason, refusal_code, refusal_text
from barbu_env.view.table import card_label, state_view

SPADES = 3


def refused(state: BarbuState, typed: str, action: int) -> list[str]:
    """The terminal seat's and the browser table's answers to the seat to act choosing
    ``action`` (typed as ``typed`` at the terminal)."""
    seat = state.current_player
    assert action not in state.legal_actions()
    with pytest.raises(ChoiceError) as terminal:
        parse_choice(state_view(state, seat), typed)
    return [str(terminal.value), refusal(state_view(state, seat), action)]


def doubling_turn(rules: Rules, hand: int) -> BarbuState:
    """P0 declares hands 0 .. ``hand`` (its contracts in order) and nobody doubles while
    nothing obliges it; returns the state at the first doubling turn of hand ``hand``."""
    state = BarbuState.new_game(rules, np.random.default_rng(0), first_declarer=0)
    while True:
        if state.phase is Phase.DOUBLE and state.hand_number == hand:
            return state
        legal = state.legal_actions()
        state.apply_action(DOUBLE_OFFSET if DOUBLE_OFFSET in legal else legal[0])


@pytest.mark.parametrize("owed, forced_hand, words", [(3, 4, "at least 3 times"), (1, 6, "at least once")])
def test_the_doubling_obligation_is_told_with_the_rules_number(owed, forced_hand, words):
    # Nobody has doubled P0 in its first hands: with `owed` doubles owed and as many hands
    # left, the seat to act must double P0 now, and both tables say how often, per the rules.
    rules = Rules(min_declarer_doubles=owed)
    state = doubling_turn(rules, forced_hand)
    seat = state.current_player
    assert seat != 0 and DOUBLE_OFFSET not in state.legal_actions()
    for message in refused(state, "nobody", DOUBLE_OFFSET):
        assert "must double the declarer" in message and words in message, message
        assert "twice" not in message and "min_declarer_doubles" in message
        assert f"you still owe them {owed}" in message
    if Contract(state.contract) not in (Contract.TRUMPS, Contract.DOMINO):
        # Naming someone else but not the declarer breaks the same obligation.
        other = next(b for b in range(1, 8) if not (b >> ((0 - seat - 1) % 4)) & 1)
        names = "+".join(("left", "opposite", "right")[k] for k in range(3) if other >> k & 1)
        for message in refused(state, names, DOUBLE_OFFSET + other):
            assert "must double the declarer" in message and words in message, message


def test_the_human_seat_takes_the_rules_in_force_from_its_table():
    rules = Rules(min_declarer_doubles=3)
    state = doubling_turn(rules, 4)
    seat = state.current_player
    lines, out = iter(["nobody", "right"]), []
    agent = HumanAgent(read=lambda _prompt: next(lines), write=out.append, rules=rules)
    obs = {"observation": state.observe(seat), "action_mask": mask_array(state.legal_mask())}
    assert agent.act(obs, AGENTS[seat]) in state.legal_actions()
    [told] = [line for line in out if line.startswith("Not allowed: ")]
    assert "at least 3 times" in told and "twice" not in told


def test_only_the_declarer_may_be_doubled_is_told_as_this_tables_rule():
    state = doubling_turn(load_rules("declarer_only"), 0)  # No Tricks: anyone, but for the rule
    seat = state.current_player
    declarer_bit = (0 - seat - 1) % 4
    both = (1 << declarer_bit) | (1 << ((declarer_bit + 1) % 3))
    names = "+".join(("left", "opposite", "right")[k] for k in range(3) if both >> k & 1)
    for message in refused(state, names, DOUBLE_OFFSET + both):
        assert "only the declarer" in message and "doubling_targets" in message, message


def trumps_position(rules: Rules, trump_in_trick: bool, lower_trump: bool = False) -> tuple[BarbuState, int, int]:
    """A Trumps (spades) hand in play, the seat to act void in the plain suit led and holding a
    trump and a plain card; with ``trump_in_trick`` the trick holds a trump the seat can beat
    (and, with ``lower_trump``, one it cannot). Returns the state, a plain card and a trump
    below the trick's (or -1)."""
    for seed in range(200):
        rng = np.random.default_rng(seed)
        state = BarbuState.new_game(rules, rng, first_declarer=0)
        state.apply_action(DECLARE_OFFSET + Contract.TRUMPS)
        state.apply_action(TRUMP_OFFSET + SPADES)
        while state.phase is Phase.DOUBLE:
            state.apply_action(DOUBLE_OFFSET)
        while state.phase is Phase.TRICKS:
            hand = state.hands[state.current_player]
            trick = [c for c in state.trick if c >= 0]
            if (
                trick
                and suit_of(state.trick[state.leader]) != SPADES
                and not hand & SUIT_MASK[suit_of(state.trick[state.leader])]
            ):
                top = max((c for c in trick if suit_of(c) == SPADES), default=-1)
                trumps = [c for c in cards_of(hand) if suit_of(c) == SPADES]
                plain = [c for c in cards_of(hand) if suit_of(c) != SPADES]
                higher, lower = [c for c in trumps if c > top], [c for c in trumps if c < top]
                if plain and higher and (top >= 0) == trump_in_trick and (bool(lower) or not lower_trump):
                    return state, plain[0], lower[0] if lower else -1
            legal = state.legal_actions()
            state.apply_action(legal[rng.integers(len(legal))])
    raise AssertionError("no such position in 200 deals")


def test_trumps_overtrump_is_told_as_its_rule_when_ruffing_is_not_required():
    # A plain card onto a trick holding a trump the seat can beat: refused for the overtrump
    # obligation, which holds here although trumps_must_ruff is off.
    state, plain, _ = trumps_position(Rules(trumps_must_ruff=False), trump_in_trick=True)
    for message in refused(state, card_text(plain), plain):
        assert "overtrump" in message and "trumps_must_overtrump" in message, message
        assert "trumps_must_ruff" not in message


def test_trumps_ruff_is_told_as_its_rule_when_overtrumping_is_not_required():
    state, plain, _ = trumps_position(Rules(trumps_must_overtrump=False), trump_in_trick=True)
    for message in refused(state, card_text(plain), plain):
        assert "must play a trump" in message and "trumps_must_ruff" in message, message
        assert "overtrump" not in message
    state, plain, _ = trumps_position(Rules(), trump_in_trick=False)
    for message in refused(state, card_text(plain), plain):
        assert "must play a trump" in message and "trumps_must_ruff" in message, message


def test_a_trump_too_low_is_told_which_trump_to_beat():
    state, _, low = trumps_position(Rules(), trump_in_trick=True, lower_trump=True)
    top = max(c for c in state.trick if c >= 0 and suit_of(c) == SPADES)
    for message in refused(state, card_text(low), low):
        assert "overtrump" in message and "trumps_must_overtrump" in message, message
        assert f"above {card_label(top)}" in message


def test_every_reason_the_kernels_give_has_its_words():
    state, plain, _ = trumps_position(Rules(), trump_in_trick=True)
    view = state_view(state, state.current_player)
    for code in Refusal:
        if code is not Refusal.LEGAL:  # (a contract for the one reason about contracts)
            assert reason(view, DECLARE_OFFSET if code is Refusal.ALREADY_DECLARED else plain, code), code
    with pytest.raises(ValueError, match="legal"):
        reason(view, state.legal_actions()[0])


@pytest.mark.parametrize("preset", ["standard", "classic", "rotating", "declarer_only"])
def test_the_seat_s_view_gives_the_same_reason_as_the_game_and_words_for_each(preset):
    # The terminal seat reads the reason from its observation (the position it shows), the
    # browser table from the game: the same code for every action, and words for each refusal.
    rng, rules = np.random.default_rng(1), load_rules(preset)
    state = BarbuState.new_game(rules, rng, first_declarer=0)
    hands = 5 if rules.rotation == "every_hand" else 2  # until P0 declares a second time
    seen, decisions = set(), 0
    while state.hand_number < hands:
        decisions += 1
        if state.phase not in (Phase.TRICKS, Phase.DOMINO) or decisions % (7 * hands) == 0:
            view = state_view(state, state.current_player)
            legal = set(state.legal_actions())
            for action in range(85):
                code = state.refusal(action)
                assert refusal_code(view, action) is code, (action, code)
                assert (code is Refusal.LEGAL) == (action in legal)
                if code is not Refusal.LEGAL:
                    seen.add(code)
                    text = refusal_text(view, action)
                    assert "not one of your choices" not in text and "{" not in text, text
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    assert {Refusal.WRONG_PHASE, Refusal.NOT_HELD, Refusal.ALREADY_DECLARED} <= seen
