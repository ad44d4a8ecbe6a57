"""Crediting a seat: the one rule that turns each step's rewards into each decision's reward.

A hand of Barbu usually ends on another seat's card, so most of what a seat scores
arrives at steps where it does not act. Every learner of this project credits those
rewards the same way:

    A seat's reward for one of its decisions is the sum of its own rewards from the step
    of that decision up to (not including) its next decision, or to the end of the game.

Rewards that arrive for a seat before its first decision belong to no decision of it.
The rule comes in two forms, the second built on the first:

* :class:`SeatCredit`, an accumulator for games that are being stepped, one row of four
  seats per game: ``add`` each step's rewards of all seats, ``decide`` when seats make
  decisions (it closes each seat's previous decision with its reward), ``end`` when games
  end (it closes every seat's latest decision), or ``take`` a seat's pending rewards when
  the decisions need no ids. The Gymnasium and RLlib environments keep one game's; the
  trainer's collector keeps ``num_games`` games' and closes thousands of decisions per
  step with array operations.
* :func:`credit_steps`, a pure function over a recorded sequence of steps (the seat
  deciding at each step, every seat's rewards at each step, where games end): each
  decision's reward, whether the game ended before the seat's next decision, and that
  next decision (the TorchRL example's collections).

>>> credit = credit_steps(deciders=[0, 1, -1, 0, 1], rewards=[[0, 0], [0, 0], [3, -3], [0, 0], [1, 2]],
...                       game_over=[False, False, False, False, True])
>>> credit.rewards.tolist(), credit.next_step.tolist(), credit.ended.tolist()
([3.0, -3.0, 0.0, 1.0, 2.0], [3, 4, -1, -1, -1], [False, False, False, True, True])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .constants import NUM_PLAYERS

#: The id of "no decision": a seat that has not decided yet, a step that is no decision.
NO_DECISION = -1


class SeatCredit:
    """Every seat's rewards since its latest decision, for ``num_games`` games stepped together.

    ``pending[g, s]`` holds the rewards of seat ``s`` of game ``g`` since its latest
    decision, whose id (any non-negative int the caller chooses, e.g. the index of the
    transition it stored) is ``latest[g, s]`` (``NO_DECISION`` before its first). The
    arguments ``games`` and ``seats`` are an int or matching int arrays (a (game, seat)
    pair at most once per call).

    >>> c = SeatCredit(num_games=1)
    >>> c.decide(0, 2, 10)  # seat 2 decides (its first decision: nothing to close)
    (-1, 0.0)
    >>> c.add([[5, 0, -4, -1]])  # a hand ends: every seat's settled score
    >>> c.decide(0, 2, 11)  # its next decision closes decision 10 with its reward
    (10, -4.0)
    >>> c.add([[0, 0, 7, -7]]); c.end(0)  # the game ends: every seat's latest decision closes
    (array([-1, -1, 11, -1]), array([ 5.,  0.,  7., -8.]))
    """

    def __init__(self, num_games: int = 1, num_seats: int = NUM_PLAYERS):
        self.pending = np.zeros((num_games, num_seats), dtype=np.float64)
        self.latest = np.full((num_games, num_seats), NO_DECISION, dtype=np.int64)

    def reset(self, games: ArrayLike | slice = slice(None)) -> None:
        """Start ``games`` (default: all) anew: nothing pending, no decision yet."""
        self.pending[games] = 0.0
        self.latest[games] = NO_DECISION

    def add(self, rewards: ArrayLike) -> None:
        """This step's rewards, ``[num_games, num_seats]``: each goes to its seat's latest decision."""
        self.pending += rewards

    def take(self, games: ArrayLike, seats: ArrayLike) -> np.ndarray | float:
        """The rewards pending for these seats, handed over (pending starts again from 0):
        the reward of the decision they made last, for users that keep no decision ids."""
        owed = self.pending[games, seats]
        owed = owed.copy() if isinstance(owed, np.ndarray) else float(owed)
        self.pending[games, seats] = 0.0
        return owed

    def decide(self, games: ArrayLike, seats: ArrayLike, ids: ArrayLike) -> tuple[np.ndarray | int, np.ndarray | float]:
        """These seats make decisions ``ids``. Returns the decisions this closes — each
        seat's previous decision (``NO_DECISION`` where it had none) — and their rewards."""
        previous = self.latest[games, seats]
        previous = previous.copy() if isinstance(previous, np.ndarray) else int(previous)
        owed = self.take(games, seats)
        self.latest[games, seats] = ids
        return previous, owed

    def end(self, games: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """These games are over: every seat's latest decision (``[..., num_seats]``,
        ``NO_DECISION`` for a seat that never decided) and its reward; the games start anew."""
        latest, owed = self.latest[games].copy(), self.pending[games].copy()
        self.reset(games)
        return latest, owed


class StepCredit(NamedTuple):
    """The credit of each step of a sequence (see :func:`credit_steps`), all ``[T]``."""

    rewards: np.ndarray
    """float64: a decision's reward (0 at steps that are no decision)."""
    ended: np.ndarray
    """bool: the game ended before the seat's next decision."""
    next_step: np.ndarray
    """int64: the step of the seat's next decision in the same game (``NO_DECISION`` where the
    game ended first, and at steps that are no decision)."""
    complete: np.ndarray
    """bool: a decision whose outcome the sequence reaches (its seat's next decision or the
    end of its game); false at steps that are no decision and at decisions the sequence
    stops before the outcome of (their ``rewards`` so far are partial)."""


def credit_steps(deciders: ArrayLike, rewards: ArrayLike, game_over: ArrayLike) -> StepCredit:
    """Each decision's credit over a recorded sequence of ``T`` steps of one or more games
    played one after the other: ``deciders[t]`` is the seat deciding at step ``t``
    (``NO_DECISION``: a step not to credit, e.g. a forced move or an opponent's),
    ``rewards[t, s]`` the reward seat ``s`` receives from step ``t`` (every seat, acting
    or not), ``game_over[t]`` whether a game ended with step ``t`` (the next step begins
    a new one). The rule is :class:`SeatCredit`'s."""
    deciders = np.asarray(deciders, dtype=np.int64)
    rewards = np.asarray(rewards, dtype=np.float64)
    game_over = np.asarray(game_over, dtype=bool)
    steps = len(deciders)
    out = StepCredit(
        np.zeros(steps),
        np.zeros(steps, dtype=bool),
        np.full(steps, NO_DECISION, dtype=np.int64),
        np.zeros(steps, dtype=bool),
    )
    credit = SeatCredit(num_games=1, num_seats=rewards.shape[1])
    for t in range(steps):
        if deciders[t] != NO_DECISION:
            previous, owed = credit.decide(0, deciders[t], t)
            if previous != NO_DECISION:
                out.rewards[previous], out.next_step[previous], out.complete[previous] = owed, t, True
        credit.add(rewards[t])
        if game_over[t]:
            latest, owed = credit.end(0)
            closed = latest[latest != NO_DECISION]
            out.rewards[closed], out.ended[closed], out.complete[closed] = owed[latest != NO_DECISION], True, True
    latest = credit.latest[0]
    open_ = latest[latest != NO_DECISION]  # the sequence stops before these decisions' outcomes
    out.rewards[open_] = credit.pending[0][latest != NO_DECISION]
    return out


__all__ = ["NO_DECISION", "SeatCredit", "StepCredit", "credit_steps"]
