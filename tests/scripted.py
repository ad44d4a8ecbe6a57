"""Scripted deals and hands for the rule tests, written as card strings.

A test builds a deal from four strings of 13 cards (seats 0-3), starts a game on it,
drives the declaration, trump/rank and doubling decisions, then plays cards by text:

>>> s = new_game(deal("AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
...                   "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D",
...                   "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
...                   "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S"))
>>> start(s, "no_tricks")
>>> play(s, "2C 2D 2H 2S")
>>> s.current_player, s.points, legal_text(s)[:8]
(0, [-2, 0, 0, 0], '3C 4C 5C')

Doubling actions are ids ``76 + b`` with b a set of seats relative to the actor
(bit 0 left, bit 1 opposite, bit 2 right); ``names(actor, *seats)`` builds one from
absolute seats: ``names(1, 0) == 80`` (seat 0 is seat 1's right).

This is a helper module for the tests, not a test file.
"""

from __future__ import annotations

import numpy as np

from barbu_env.game.actions import DECLARE_OFFSET, DOUBLE_OFFSET, PASS_ACTION, RANK_OFFSET, TRUMP_OFFSET
from barbu_env.game.cards import FULL_DECK, RANK_LETTERS, SUIT_LETTERS, card_from_text, hand_text, mask_of
from barbu_env.game.engine import (
    CONTRACT_NAMES,
    BarbuState,
    Contract,
    HandResult,
    Phase,
    actions_of,
)

NOBODY = DOUBLE_OFFSET  # 76: a doubling turn that names nobody
PASS = PASS_ACTION  # 84: Domino pass
_PASS_WORDS = ("--", "pass")


def deal(p0: str, p1: str, p2: str, p3: str) -> list[list[str]]:
    """Four hands as lists of card text, checked to be 4 x 13 distinct cards of the deck
    (so a typo in a test deal fails loudly here, not as a confusing rule failure)."""
    hands = [text.split() for text in (p0, p1, p2, p3)]
    for seat, hand in enumerate(hands):
        if len(hand) != 13:
            raise ValueError(f"test deal: seat {seat} has {len(hand)} cards, not 13: {hand}")
    if mask_of(c for hand in hands for c in hand) != FULL_DECK:
        raise ValueError("test deal: the four hands are not the 52 distinct cards")
    return hands


def new_game(*deals, rules=None, first_declarer: int = 0) -> BarbuState:
    """A game whose first hands are ``deals`` (later hands dealt from a fixed seed)."""
    return BarbuState.new_game(
        rules=rules, rng=np.random.default_rng(0), first_declarer=first_declarer, deals=list(deals)
    )


def contract_action(contract: Contract | str) -> int:
    """The declare action of a contract given as ``Contract`` or its name ("no_hearts")."""
    if isinstance(contract, str):
        contract = CONTRACT_NAMES.index(contract)
    return DECLARE_OFFSET + int(contract)


def names(actor: int, *seats: int) -> int:
    """The doubling action of ``actor`` naming the absolute ``seats``."""
    bits = 0
    for seat in seats:
        rel = (seat - actor - 1) % 4
        if rel == 3:
            raise ValueError(f"seat {actor} cannot name itself")
        bits |= 1 << rel
    return DOUBLE_OFFSET + bits


def declare(state: BarbuState, contract: Contract | str, trump: str | None = None, rank: str | None = None) -> None:
    """The declarer's choices: contract, then the trump suit letter ("S") for Trumps or
    the starting rank letter ("7", "T", "A") for Domino."""
    assert state.phase is Phase.DECLARE, state.phase
    state.apply_action(contract_action(contract))
    if state.phase is Phase.TRUMP:
        state.apply_action(TRUMP_OFFSET + SUIT_LETTERS.index(trump))
    elif state.phase is Phase.DOMINO_RANK:
        state.apply_action(RANK_OFFSET + RANK_LETTERS.index(rank))
    assert state.phase is Phase.DOUBLE, state.phase


def double(state: BarbuState, actions=()) -> None:
    """The doubling turns: ``actions`` in order, then "nobody" (76) for the remaining turns."""
    assert state.phase is Phase.DOUBLE, state.phase
    for a in actions:
        assert state.phase is Phase.DOUBLE, f"no doubling turn left for action {a}"
        state.apply_action(a)
    for _ in range(7):  # at most 4 turns and 3 redouble-pass turns
        if state.phase is not Phase.DOUBLE:
            return
        state.apply_action(NOBODY)
    raise AssertionError("the doubling turns did not end")


def take_turns(state: BarbuState, actions) -> None:
    """Exactly these doubling actions, in turn order (nothing for the turns after them)."""
    for a in actions:
        assert state.phase is Phase.DOUBLE, f"no doubling turn left for action {a}"
        state.apply_action(a)


def start(state: BarbuState, contract, trump=None, rank=None, doubles=()) -> None:
    """Declare, name the trump/rank, and take the doubling turns: up to the first card."""
    declare(state, contract, trump=trump, rank=rank)
    double(state, doubles)


def action_of(token: str) -> int:
    """A play token: card text, or "--"/"pass" for the Domino pass."""
    return PASS if token.lower() in _PASS_WORDS else card_from_text(token)


def play(state: BarbuState, script: str) -> HandResult | None:
    """Play the cards (and passes) of ``script`` in turn order; "|" may separate tricks.

    Returns the HandResult if the last action ended the hand; a hand ending before the
    script does is an error of the script."""
    tokens = [t for t in script.replace("|", " ").split()]
    result = None
    for i, token in enumerate(tokens):
        if result is not None:
            raise AssertionError(f"the hand ended before {' '.join(tokens[i:])!r}")
        result = state.apply_action(action_of(token))
    return result


def legal_text(state: BarbuState) -> str:
    """The legal actions as text: the playable cards (id order), "pass" for 84."""
    mask = state.legal_mask()
    words = []
    if mask & FULL_DECK:
        words.append(hand_text(mask & FULL_DECK))
    if (mask >> PASS) & 1:
        words.append("pass")
    other = mask & ~FULL_DECK & ~(1 << PASS)
    if other:
        words.append(" ".join(str(a) for a in actions_of(other)))
    return " ".join(words)


def hand_of(state: BarbuState, seat: int) -> str:
    return hand_text(state.hands[seat])


#: More turns than any hand can take (Domino: every round of four turns places a card).
MAX_TURNS_PER_HAND = 7 + 4 + 52 * 4


def lowest_action(state: BarbuState) -> int:
    mask = state.legal_mask()
    assert mask, f"no legal action in phase {state.phase.name}"
    return (mask & -mask).bit_length() - 1


def finish_hand(state: BarbuState) -> HandResult:
    """Play the rest of the hand with the lowest legal action at every turn."""
    for _ in range(MAX_TURNS_PER_HAND):
        result = state.apply_action(lowest_action(state))
        if result is not None:
            return result
    raise AssertionError(f"hand {state.hand_number} did not end within {MAX_TURNS_PER_HAND} turns")


def finish_game(state: BarbuState) -> BarbuState:
    """Play the rest of the game with the lowest legal action at every turn."""
    while not state.is_terminal:
        finish_hand(state)
    return state


#: One suit per seat: the leader wins every trick (nobody else can follow).
SUIT_PER_SEAT = deal(
    "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
    "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D",
    "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
    "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
)
