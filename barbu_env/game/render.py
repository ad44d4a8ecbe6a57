"""Text rendering of a game state (the environment's "ansi" mode, ``barbu replay``).

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> print(render_state(BarbuState.new_game(rng=np.random.default_rng(1), first_declarer=0)).splitlines()[0])
Hand 1/28 - declarer P0 - contract: (choosing) - phase DECLARE
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .actions import action_text
from .cards import RANK_NAMES, SUIT_MASK, SUIT_NAMES, card_text, cards_of
from .constants import CONTRACT_NAMES, NUM_HANDS, Phase

if TYPE_CHECKING:
    from .engine import BarbuState

_SUIT_SYMBOLS = "♣♦♥♠"


def hand_by_suit(mask: int) -> str:
    """A hand grouped by suit, high to low: ``♠ A K 2  ♥ Q  ♦ -  ♣ T 9``."""
    parts = []
    for s in (3, 2, 1, 0):
        ranks = [card_text(c)[0] for c in reversed(cards_of(mask & SUIT_MASK[s]))]
        parts.append(f"{_SUIT_SYMBOLS[s]} {' '.join(ranks) if ranks else '-'}")
    return "  ".join(parts)


def render_state(state: BarbuState, viewer: int | None = None) -> str:
    """A few lines: hand, declarer, contract, doubles, trick or Domino rows, scores, and
    the hand of the seat to act (or of ``viewer`` if given)."""
    if state.phase is Phase.GAME_OVER:
        lines = [f"Game over after {state.hand_number} hand{'s' if state.hand_number != 1 else ''}"]
    else:
        contract = CONTRACT_NAMES[state.contract] if state.contract >= 0 else "(choosing)"
        if state.trump >= 0:
            contract += f", trumps {SUIT_NAMES[state.trump]}"
        if state.start_rank >= 0:
            contract += f", starting rank {RANK_NAMES[state.start_rank]}"
        lines = [
            f"Hand {state.hand_number + 1}/{NUM_HANDS} - declarer P{state.declarer} - contract: {contract}"
            f" - phase {state.phase.name}"
        ]
        doubles = [
            f"P{i}->P{j}" + (" (redouble)" if (state.named[j] >> i) & 1 and _named_first(state, j, i) else "")
            for i in range(4)
            for j in range(4)
            if (state.named[i] >> j) & 1
        ]
        if doubles:
            lines.append("Doubles: " + ", ".join(doubles))
        if state.phase is Phase.TRICKS:
            order = [(state.leader + k) % 4 for k in range(4)]
            trick = "  ".join(f"P{p}:{card_text(state.trick[p])}" for p in order if state.trick[p] >= 0)
            lines.append(f"Trick {state.trick_number + 1}/13, led by P{state.leader}: {trick or '(no card yet)'}")
            lines.append("Tricks won: " + " ".join(f"P{p}={state.tricks_won[p]}" for p in range(4)))
            lines.append("Points this hand: " + " ".join(f"P{p}={state.points[p]}" for p in range(4)))
        elif state.phase is Phase.DOMINO:
            rows, played = [], state.played
            for s in (3, 2, 1, 0):
                laid = cards_of((played[0] | played[1] | played[2] | played[3]) & SUIT_MASK[s])
                rows.append(
                    f"{_SUIT_SYMBOLS[s]} " + (f"{card_text(laid[0])[0]}..{card_text(laid[-1])[0]}" if laid else "-")
                )
            lines.append("Rows: " + "  ".join(rows))
            if state.out_order:
                lines.append("Out: " + ", ".join(f"P{p}" for p in state.out_order))
    lines.append("Scores: " + " ".join(f"P{p}={state.scores[p]}" for p in range(4)))
    seat = viewer if viewer is not None else state.current_player
    if seat is not None and seat >= 0:
        lines.append(f"P{seat} holds: {hand_by_suit(state.hands[seat])}")
        if viewer is None and state.phase is not Phase.GAME_OVER:
            lines.append("Legal: " + ", ".join(action_text(a) for a in state.legal_actions()))
    return "\n".join(lines)


def _named_first(state: BarbuState, first: int, second: int) -> bool:
    """Whether ``first`` named ``second`` before ``second`` named ``first``."""
    order = state.double_order
    return order.index(first) < order.index(second) if first in order and second in order else False


__all__ = ["hand_by_suit", "render_state"]
