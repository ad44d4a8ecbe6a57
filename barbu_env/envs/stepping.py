"""What every adapter's step does with one game, written once.

- The illegal-action policy: ``ILLEGAL_ACTION_MODES`` names its choices, ``"raise"`` (an
  ``IllegalActionError``, the game unchanged) and ``"random"`` (a uniformly random legal
  action is played instead: one draw ``rng.integers(len(legal))`` from the adapter's
  generator). ``check_illegal_action(mode, default)`` refuses any other choice, listing the
  adapter's default first; ``play_instead`` applies the choice. Each adapter keeps its own
  default (the AEC environment ``"raise"``, ``Barbu-v1`` and its vector form ``"random"``).
- The terminal mask: ``action_mask(game, seat)`` is ``seat``'s legal actions as an int8[85]
  mask, all zeros when another seat is to act or the game is over.
- Playing the others until a seat: ``play_turns(game, agents, until)`` lets the agents seated
  at ``game`` play (each ``Agent.act(observation, agent)`` is given the
  observation and mask of the seat to act) until ``until`` has a choice to make, the game is
  over, or a given number of hands has been played.

The dead step (a step after the episode ended) is each framework's own contract and stays
with its adapter: PettingZoo's ``_was_dead_step``, Gymnasium's ``RuntimeError``, the vector
environment's autoreset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..game.actions import AGENTS, NUM_ACTIONS, mask_array
from ..game.constants import NUM_PLAYERS
from ..game.engine import IllegalActionError
from ..util.files import quote

if TYPE_CHECKING:
    from ..agents.base import Agent
    from ..game.engine import BarbuState, HandResult

#: What a step may do with an action off the mask: raise, or play a random legal action instead.
ILLEGAL_ACTION_MODES = ("raise", "random")


def check_illegal_action(mode: Any, default: str) -> str:
    """``mode`` if it is one of ``ILLEGAL_ACTION_MODES``, else ``ValueError`` listing them,
    the adapter's ``default`` first."""
    if mode not in ILLEGAL_ACTION_MODES:
        modes = (default, *(m for m in ILLEGAL_ACTION_MODES if m != default))
        raise ValueError(f"illegal_action must be one of {modes}, not {quote(mode)}")
    return mode


def play_instead(mode: str, legal: Sequence[int], rng: np.random.Generator, refusal: Callable[[], str]) -> int:
    """The action to play in place of an illegal one under ``mode``: ``"raise"`` raises
    ``IllegalActionError(refusal())``; ``"random"`` draws one of ``legal`` (ascending) from ``rng``."""
    if mode == "raise":
        raise IllegalActionError(refusal()) from None
    return int(legal[int(rng.integers(len(legal)))])


def action_mask(game: BarbuState, seat: int) -> np.ndarray:
    """``seat``'s legal actions as an int8[85] mask: zeros when another seat is to act or
    the game is over (its legal set is then empty)."""
    if seat != game.current_player:
        return np.zeros(NUM_ACTIONS, dtype=np.int8)
    return mask_array(game.legal_mask())


def seated(agents: Sequence[Agent], seat: int) -> list[Agent | None]:
    """The three ``agents`` of the seats after ``seat`` (left, opposite, right) by absolute
    seat, None at ``seat``."""
    out: list[Agent | None] = [None] * NUM_PLAYERS
    for k, agent in enumerate(agents, start=1):
        out[(seat + k) % NUM_PLAYERS] = agent
    return out


def play_turns(
    game: BarbuState,
    agents: Sequence[Agent | None],
    until: int | None = None,
    *,
    hands: int | None = None,
    skip_forced: bool = False,
    apply: Callable[[Any], HandResult | None] | None = None,
) -> list[HandResult]:
    """Let ``agents`` (one per absolute seat) play ``game`` until seat ``until`` has a choice
    to make (None: every seat is played), the game is over, or ``game.results`` holds
    ``hands`` hands. With ``skip_forced`` the forced turns of ``until`` (one legal action)
    are played for it. Each agent's action goes to ``apply`` as it returned it (default:
    ``game.apply_action``); returns the results of the hands that ended on the way."""
    results: list[HandResult] = []
    while not game.is_terminal and (hands is None or len(game.results) < hands):
        actor = game.current_player
        legal = game.legal_mask()
        if actor == until:
            if not (skip_forced and legal & (legal - 1) == 0):
                break
            action = legal.bit_length() - 1
        else:
            obs = {"observation": game.observe(actor), "action_mask": mask_array(legal)}
            action = agents[actor].act(obs, AGENTS[actor])
        result = game.apply_action(action, observe=True) if apply is None else apply(action)
        if result is not None:
            results.append(result)
    return results


__all__ = [
    "ILLEGAL_ACTION_MODES",
    "action_mask",
    "check_illegal_action",
    "play_instead",
    "play_turns",
    "seated",
]
