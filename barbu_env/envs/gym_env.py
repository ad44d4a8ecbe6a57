"""Barbu for single-agent libraries: one learning seat, three opponents, a Gymnasium env.

===================  =============================================================
Import               ``import gymnasium, barbu_env`` then
                     ``gymnasium.make("Barbu-v1", opponents="random")``
Class                ``barbu_env.envs.gym_env.BarbuGymEnv`` (the same keyword arguments)
Action space         ``Discrete(85)`` (the AEC environment's actions, docs/rules.md)
Observation space    ``Box(1132,) float32``: the learner's ``observation`` vector,
                     bounded as the AEC environment's under the same rules
Action mask          ``info["action_mask"]``: int8[85]; ``action_masks()`` on the
                     environment itself: ``env.unwrapped.action_masks()`` or
                     ``env.get_wrapper_attr("action_masks")()`` through the wrappers
                     ``gymnasium.make`` adds (sb3-contrib's ``MaskablePPO`` finds it)
Episode              one whole game (28 hands), about 400 decisions of the learner;
                     or its first 7 hands or first hand (``episode``)
Many at once         ``gymnasium.make_vec("Barbu-v1", num_envs=N, ...)``: N of these
                     on the batched engine, the same arguments
                     (``barbu_env.envs.vector_gym.BarbuGymVectorEnv``)
===================  =============================================================

The learner sits in one seat of ``barbu_env.env()``'s game; the other three seats are
played by agents of ``barbu_env.agents`` (``Agent.act(observation, agent)``) between
the learner's decisions. ``reset`` returns the learner's first decision, ``step(action)``
applies it and plays the opponents until the learner is to act again or the game is
over. Observations and masks are exactly those the AEC environment gives that seat.

Arguments
---------
``BarbuGymEnv(opponents="random", seat=0, rules=None, reward_scale=1.0,
skip_forced=False, illegal_action="random", render_mode=None, episode="game")``

- ``opponents``: one agent spec for all three other seats, or three specs in seat order
  after the learner (left, opposite, right). A spec is a registered agent name
  (``"random"``, ``"heuristic"``), a checkpoint path (anything ``barbu eval`` accepts), or
  an ``Agent`` object. Agents made from names are rebuilt at every reset with seeds drawn
  from the environment's generator, so a seeded reset replays the same game.
- ``seat``: the learner's seat 0-3, or ``"rotate"``: seat 0-3 in turn, one per episode,
  starting from a seat drawn at each seeded reset. ``info["seat"]`` tells which.
- ``rules``: as for ``barbu_env.env`` (a preset name, a YAML path, a mapping, a ``Rules``).
- ``reward_scale``: rewards are the learner's settled hand scores times this (default
  1: the rewards of a game sum to the learner's final score, as in the AEC environment).
  0 makes every reward 0.
- ``skip_forced``: when true, the learner's forced decisions (a single legal action: a
  declarer's doubling turn nobody doubled, a Domino pass, a last card) are played for
  it and not returned (the AEC environment itself puts every forced turn to its agent).
- ``illegal_action``: what ``step`` does with an action of ``Discrete(85)`` off the mask
  (an action outside the space raises ``ValueError`` in either mode). ``"random"`` (the
  default, so that every action of ``Discrete(85)`` is valid, as Gymnasium's API and its
  checkers expect): a uniformly random legal action is played instead and
  ``info["illegal_action"]`` is true. ``"raise"``: ``IllegalActionError``, nothing
  changes (the AEC environment's behaviour; training with masks should use it).
- ``render_mode``: ``"ansi"`` (``render()`` returns the table as text), ``"rgb_array"``
  (the table as a picture, ``uint8[640, 960, 3]``, from the learner's seat: its hand
  face up, the others' backs; ``barbu_env.view.frames``) or None.
- ``episode``: ``"game"`` (the default: 28 hands), ``"round"`` (the first seven hands)
  or ``"hand"`` (the first hand), as for ``barbu_env.env``: an episode is the start of
  the whole game, exactly, and ends when its last hand is settled
  (docs/rules.md#episodes).

Rewards
-------
The reward of ``step`` is the sum of the learner's settled scores (raw contract score
plus its side bets) of every hand that ended since its previous decision: the hand its
action finished, or the hand the opponents finished before its next turn. Hands end
often on an opponent's card, so that is where most rewards arrive. Only the learner's
own score counts, never an opponent's. Over an episode the rewards sum to
``reward_scale`` times the learner's score over its hands.

Infos
-----
Every ``info`` has ``"seat"`` and ``"action_mask"``; a ``step`` that saw hands end has
``"hand_results"`` (their ``HandResult.to_dict()``s, as the AEC environment's
``"hand_result"``), and the last step of the episode ``"scores"`` (the four final scores,
the totals of its hands, absolute seats).

Reset options
-------------
``reset(seed=None, options=None)``: ``"deals"`` and ``"first_declarer"`` as in the AEC
environment, and ``"seat"`` to put the learner in a given seat for this episode; any
other key raises ``ValueError``. As in
Gymnasium, ``reset(seed=s)`` seeds the environment's generator (``np_random``) and a
``reset()`` without a seed draws the next game, opponents and all, from the same one.

Termination
-----------
``terminated`` is true after hand 28, or the last hand of a shorter ``episode``;
``truncated`` is always false.

Version history
---------------
* v1: the AEC environment's v1 observation (1132 values) and the ``episode`` argument.
  ``"Barbu-v0"`` raises ``gymnasium.error.DeprecatedEnv`` saying so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..agents import Agent, make_agent
from ..game.actions import NUM_ACTIONS, action_text
from ..game.constants import NUM_PLAYERS
from ..game.credit import SeatCredit
from ..game.engine import BarbuState, episode_hands
from ..game.observation import observation_bounds
from ..game.render import render_state
from ..game.rules import Rules, load_rules
from ..util.files import quote
from ._versions import GYM_ENV_ID
from .stepping import (
    ILLEGAL_ACTION_MODES,
    action_mask,
    check_illegal_action,
    play_instead,
    play_turns,
    seated,
)

#: The keys ``reset``'s ``options`` may have (any other is refused: a misspelt option would
#: otherwise pass unnoticed).
RESET_OPTIONS = ("deals", "first_declarer", "seat")


def opponent_specs(opponents: Any) -> list[str | Agent]:
    """``opponents`` as three agent specs in seat order after the learner: one spec (a
    registered name, a checkpoint path or an ``Agent``) for all three seats, or three."""
    one = isinstance(opponents, (str, os.PathLike, Agent))
    specs = [opponents] * (NUM_PLAYERS - 1) if one else list(opponents)
    if len(specs) != NUM_PLAYERS - 1:
        raise ValueError(f"opponents must be one agent spec or three, not {len(specs)}")
    return [os.fspath(spec) if isinstance(spec, os.PathLike) else spec for spec in specs]


def check_reset_options(options: dict, allowed: Sequence[str] = RESET_OPTIONS) -> None:
    """Refuse a key of ``options`` that ``reset`` does not take, naming those it does."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}: the options are {list(allowed)}")


def check_seat_option(options: dict) -> None:
    """Refuse an ``options["seat"]`` that is not a seat 0-3."""
    if "seat" in options and (isinstance(options["seat"], bool) or options["seat"] not in range(NUM_PLAYERS)):
        raise ValueError(f"options['seat'] must be 0-3, not {quote(options['seat'])}")


def action_id(action: Any) -> int:
    """``action`` as an action id of ``Discrete(85)``: a whole number 0..84 (a Python or
    numpy number); one outside the space is a ValueError naming it, whatever
    ``illegal_action`` says of legal ones."""
    number = int(action)
    if number != action or not 0 <= number < NUM_ACTIONS:
        raise ValueError(f"action {quote(action)} is not in Discrete({NUM_ACTIONS})")
    return number


class BarbuGymEnv(gymnasium.Env):
    """One learning seat of Barbu against three agents (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        opponents: str | Agent | Sequence[str | Agent] = "random",
        seat: int | str = 0,
        rules: Rules | str | dict | None = None,
        reward_scale: float = 1.0,
        skip_forced: bool = False,
        illegal_action: str = "random",
        render_mode: str | None = None,
        episode: str = "game",
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, not {quote(render_mode)}"
            )
        if seat != "rotate" and (isinstance(seat, bool) or seat not in range(NUM_PLAYERS)):
            raise ValueError(f"seat must be 0-3 or 'rotate', not {quote(seat)}")
        check_illegal_action(illegal_action, default="random")
        specs = opponent_specs(opponents)
        episode_hands(episode)  # an unknown mode fails here, not at reset
        self.episode = episode
        self.rules = load_rules(rules)
        self.opponent_specs = specs
        self.seat_option = seat
        self.reward_scale = float(reward_scale)
        self.skip_forced = bool(skip_forced)
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.observation_space = spaces.Box(*observation_bounds(self.rules), dtype=np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        # Checks the specs now (an unknown name or a missing file fails here, not at reset).
        self._opponents = self._make_opponents(list(range(NUM_PLAYERS - 1)))
        self._credit = SeatCredit()  # every seat's settled scores since its latest decision
        self._next_seat = 0
        self.seat = seat if isinstance(seat, int) else 0
        self.game: BarbuState | None = None
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)

    # ------------------------------------------------------------------ API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        options = options or {}
        check_reset_options(options)  # before anything changes
        super().reset(seed=seed)
        check_seat_option(options)
        self.seat, self._next_seat, self._opponents, self.game = self._draw_game(
            self.np_random, self.seat, self._next_seat, seed is not None, options
        )
        self._seated = seated(self._opponents, self.seat)  # by absolute seat, None at the learner's
        self._credit.reset()
        results = self._advance()
        self._credit.take(0, self.seat)  # scores before the learner's first decision belong to none of its decisions
        info = self._info(results)
        return self._observe(), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        game = self.game
        if game is None:
            raise RuntimeError("call reset() before step()")
        if game.is_terminal:
            raise RuntimeError("the episode is over: call reset()")
        action = action_id(action)
        illegal = not self._mask[action]
        if illegal:
            legal = np.flatnonzero(self._mask).tolist()
            action = play_instead(self.illegal_action, legal, self.np_random, lambda: self._refusal(action, legal))
        result = game.apply_action(action, observe=True)
        if result is not None:
            self._credit.add([result.settled])
        results = ([result] if result is not None else []) + self._advance()
        reward = self._credit.take(0, self.seat)  # the learner's scores from this decision to its next one
        info = self._info(results)
        if illegal:
            info["illegal_action"] = True
        if game.is_terminal:
            info["scores"] = list(game.scores)
        return self._observe(), self.reward_scale * reward, game.is_terminal, False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as booleans [85] (all false once the game is over)."""
        return self._mask.astype(bool)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; use render_mode='ansi' or 'rgb_array'")
            return None
        if self.render_mode == "rgb_array":
            from ..view.frames import state_frame  # Pillow, loaded only to draw

            return state_frame(self.game, viewer=self.seat)
        return render_state(self.game, viewer=self.seat)

    # ------------------------------------------------------------------ internals

    def _draw_game(
        self, rng: np.random.Generator, seat: int, next_seat: int, fresh: bool, options: dict
    ) -> tuple[int, int, list[Agent], BarbuState]:
        """The next game drawn from ``rng`` (``fresh``: after a seeded reset): the learner's
        seat, the next seat of the rotation, the opponents and the game."""
        if "seat" in options:
            seat = int(options["seat"])
        elif self.seat_option == "rotate":
            next_seat = int(rng.integers(NUM_PLAYERS)) if fresh else next_seat
            seat, next_seat = next_seat, (next_seat + 1) % NUM_PLAYERS
        opponents = self._make_opponents([int(s) for s in rng.integers(2**31, size=NUM_PLAYERS - 1)])
        game = BarbuState.new_game(
            self.rules,
            np.random.default_rng(int(rng.integers(2**63))),
            first_declarer=options.get("first_declarer"),
            deals=options.get("deals"),
            episode=self.episode,
        )
        return seat, next_seat, opponents, game

    def _make_opponents(self, seeds: list[int]) -> list[Agent]:
        return [
            spec if not isinstance(spec, str) else make_agent(spec, seed=seed, rules=self.rules)
            for spec, seed in zip(self.opponent_specs, seeds)
        ]

    def _advance(self) -> list:
        """Play the opponents' turns (and, with ``skip_forced``, the learner's forced ones)
        until the learner has a choice to make or the game ends. Returns the results of
        the hands that ended on the way (their settled scores go to the seats' credit)."""
        game, seat = self.game, self.seat
        results = play_turns(game, self._seated, until=seat, skip_forced=self.skip_forced)
        for result in results:
            self._credit.add([result.settled])
        self._mask = action_mask(game, seat)
        return results

    def _refusal(self, action: int, legal: list[int]) -> str:
        named = ", ".join(f"{a} ({action_text(a)})" for a in legal)
        return f"action {action} ({action_text(action)}) is illegal for seat {self.seat}; legal actions: {named}"

    def _observe(self) -> np.ndarray:
        return self.game.observe(self.seat)

    def _info(self, results: list) -> dict[str, Any]:
        info: dict[str, Any] = {"seat": self.seat, "action_mask": self._mask.copy()}
        if results:
            info["hand_results"] = [r.to_dict() for r in results]
        return info


__all__ = ["GYM_ENV_ID", "ILLEGAL_ACTION_MODES", "RESET_OPTIONS", "BarbuGymEnv", "opponent_specs"]
