"""The batched engine as Gymnasium vector environments: one learner against agents, or self-play.

Two ``gymnasium.vector.VectorEnv`` classes run many Barbu games on
``barbu_env.game.vector.VectorBarbu``'s kernels:

* ``BarbuGymVectorEnv``: N copies of ``"Barbu-v1"`` (``barbu_env/envs/gym_env.py``, whose
  docstring is the contract), the learner in one seat, its three opponents played in
  the same batch. This is ``Barbu-v1``'s vector entry point.
* ``BarbuVectorEnv``: the self-play engine, every seat played by the caller (a loose
  fit; see below).

``BarbuGymVectorEnv``: one learner seat in each of N games
-----------------------------------------------------------

===================  =============================================================
Import               ``import gymnasium, barbu_env`` then ``gymnasium.make_vec(
                     "Barbu-v1", num_envs=N, vectorization_mode="vector_entry_point",
                     opponents="heuristic")`` (the default mode for ``"Barbu-v1"``)
Class                ``barbu_env.envs.vector_gym.BarbuGymVectorEnv(num_envs, ...)``, the
                     keyword arguments of ``Barbu-v1``
Sub-environment i    one ``Barbu-v1``: the learner at ``seat``, three agents
Single obs space     ``Box(1132,) float32``: the learner's observation
Single action space  ``Discrete(85)`` (docs/rules.md#cards-actions-and-observations)
Action masks         ``info["action_mask"]`` int8 [N, 85]; ``envs.action_masks()`` bool
                     [N, 85] (sb3-contrib's name)
Autoreset            ``AutoresetMode.SAME_STEP`` (the default) or ``NEXT_STEP``
                     (``autoreset_mode``; ``metadata["autoreset_mode"]``)
===================  =============================================================

Arguments: ``BarbuGymVectorEnv(num_envs=1, opponents="random", seat=0, rules=None,
reward_scale=1.0, skip_forced=False, illegal_action="random", render_mode=None,
episode="game", hand_results=False, autoreset_mode=AutoresetMode.SAME_STEP)``. All but
``num_envs``, ``hand_results`` and ``autoreset_mode`` mean
what they mean for ``Barbu-v1``, for every sub-environment: ``opponents`` one agent spec
or three in seat order after the learner (names, checkpoint paths, ``Agent`` objects;
made from names anew for every game with seeds from the sub-environment's generator),
``seat`` 0-3 or ``"rotate"``, ``skip_forced``, ``illegal_action`` (``"random"``: an
action off the mask is replaced by a random legal one, ``info["illegal_action"]`` true
for that sub-environment; ``"raise"``: ``IllegalActionError`` and no game moves),
``reward_scale``, ``episode`` (``"game"``, ``"round"``, ``"hand"``). ``render_mode``
must be None (render a game with ``Barbu-v1``). ``hand_results=True`` adds
``info["hand_results"]``, ``Barbu-v1``'s per-hand records (off by default: they are
built as text).

``step(actions)`` applies ``actions[i]`` (the learner's action in game i, int [N]),
then plays, in batch, every game's opponents (and the learner's forced moves with
``skip_forced``) until every game is at a learner decision again: the opponents' rows
of all N games are asked together, agents sharing a ``batch_key`` in one call
(``barbu_env.game.driver.act_rows``, as the batched play driver does). Games waiting at a
learner decision do not move.

What a step returns, per sub-environment i, is what ``Barbu-v1``'s ``step`` returns:
``rewards[i]`` the learner's settled scores of every hand that ended since its
previous decision (times ``reward_scale``; an episode's rewards sum to the learner's
score over its hands), ``terminated[i]`` when the episode's last hand has settled,
``truncated`` always false. Same-step autoreset: game i is then replaced at once by the
sub-environment's next game (as ``Barbu-v1``'s ``reset()`` without a seed draws it:
rotated seat, new opponents and deals) played up to the learner's first decision, and
``obs[i]``, ``info["action_mask"][i]`` and ``info["seat"][i]`` are that decision's: a
mask is never all false. The terminal observation is not returned (nothing is left to
decide: no ``"final_obs"``).

``autoreset_mode=AutoresetMode.NEXT_STEP`` (or ``"NextStep"``) is Gymnasium's other mode,
the one its ``SyncVectorEnv`` uses by default and the one its vector observation wrappers
(``NormalizeObservation``, ``DtypeObservation``, ...) require: a step that ends game i
returns ``Barbu-v1``'s last observation of it (the learner's view of the finished game,
its mask all false), and the next ``step`` starts the next game whatever ``actions[i]``
is, returning its first decision with reward 0 and ``terminated[i]`` false, as
``SyncVectorEnv`` in that mode does with ``Barbu-v1``. ``info`` follows Gymnasium's vector
convention, each key with its ``"_key"`` mask of the sub-environments that have it:

====================  =============================================================
``"action_mask"``     int8 [N, 85]: the learner's legal actions (every row)
``"seat"``            int64 [N]: the learner's seat in the game ``obs[i]`` belongs to
``"hand_results"``    (``hand_results=True``) object [N]: lists of ``HandResult.to_dict()``, the hands that
                      ended in the step (the ended game's, on a terminated row)
``"scores"``          int64 [N, 4]: the four final scores (absolute seats) of the
                      episode that ended (``"_scores"``: the terminated rows)
``"illegal_action"``  bool [N]: the action was off the mask (``"random"`` mode)
====================  =============================================================

``reset(seed=None, options=None)``: ``seed`` an int (sub-environment i seeded with
``seed + i``, as ``SyncVectorEnv`` seeds its ``Barbu-v1``\\ s), a list of N ints or
Nones, or None (each sub-environment draws its next game from its generator, as
``Barbu-v1``'s ``reset()``; one never seeded draws fresh entropy). ``options`` are
``Barbu-v1``'s (``"seat"``, ``"deals"``, ``"first_declarer"``), for every
sub-environment, and Gymnasium's ``"reset_mask"`` (bool [N]: reset only those; the
others keep their games). Another key is a ``ValueError``; ``step`` takes N action ids
(integers, or floats without fraction).

What equals what: sub-environment i keeps its own ``np_random`` generator, seeded as
``Barbu-v1``'s, draws each game's seat (``"rotate"``), opponents' seeds, deals and first
declarer from it exactly as ``Barbu-v1``'s ``reset`` does (the game itself is made by
``BarbuState.new_game`` and loaded into the batch), and gets its own opponent agents,
made from names as ``Barbu-v1`` makes them. Agents are asked in batch, but each row is
decided by its own game's instance (``random`` draws from its own generator, as
``act_batch(..., instances=...)`` promises; ``heuristic`` is deterministic). So with
opponents given by name, sub-environment i plays, move by move, the games that a
``Barbu-v1`` seeded with the same seed plays, every game, for any N: after
``reset(seed=s)``, the games of ``gymnasium.make_vec("Barbu-v1", N,
vectorization_mode="sync", ...)`` after its ``reset(seed=s)``, step for step in the same
autoreset mode (``vector_kwargs={"autoreset_mode": ...}`` for ``SyncVectorEnv``, whose
default is ``NEXT_STEP``) (``tests/test_gym_vector.py`` checks it
decision by decision, for ``random`` and ``heuristic`` opponents). Checkpoint agents
are made per game the same way; their games match wherever their ``act_batch`` over
instances decides each row as that instance's ``act`` would. Two exceptions: an ``Agent`` object given as an
opponent is one instance shared by every game, so its random stream (if it has one)
is consumed in batch order, not game by game; and a game that would end before the
learner's first decision (possible only with ``skip_forced`` and rules that force
every move of the learner's in a hand) is replaced by the next game, where
``Barbu-v1``'s ``reset`` would return a finished game.

``BarbuVectorEnv``: self-play, every seat the caller's (a loose fit)
---------------------------------------------------------------------

===================  =============================================================
Class                ``barbu_env.envs.vector_gym.BarbuVectorEnv(num_envs, rules=None,
                     seed=None, episode="game")``, a ``gymnasium.vector.VectorEnv``
Sub-environment i    game i of a ``barbu_env.game.vector.VectorBarbu``, all four seats
                     played by the caller (self-play)
Single obs space     ``Box(1132,) float32``: the observation of the seat to act
Single action space  ``Discrete(85)`` (docs/rules.md#cards-actions-and-observations)
Action masks         ``envs.action_masks()`` bool [B, 85], also ``info["action_mask"]``
Autoreset            ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``)
===================  =============================================================

Why only loosely: Gymnasium's vector environments are single-agent, one observation,
action and reward per sub-environment and step, while a Barbu game has four seats taking
turns. Here the agent of game i at a step is whichever seat is to act
(``info["seat"]``), so observations and actions fit exactly; rewards do not: a hand's
settled scores reach all four seats at once, mostly on another seat's card. The
``reward`` this class returns is the settled score of the seat that has just acted (0
unless its own action ended a hand), which keeps Gymnasium's shapes and checkers happy
but is not a learning signal. Learners use ``info["rewards"]`` (float32 [B, 4], every
seat's settled scores that arrived with the step) with ``info["seat"]`` and per-seat
bookkeeping, as ``barbu_env.game.vector``'s docstring describes; or use ``VectorBarbu``
directly, which this class only adapts.

``step`` returns ``terminated[i]`` true when game i's 28th hand has ended, or the last
hand of its episode (``episode``: ``"game"``, ``"round"`` or ``"hand"``, as for
``VectorBarbu``; docs/rules.md#episodes); game i is then already reset (same-step
autoreset): the observation is the new game's first decision. There is no terminal
observation (nothing is left to decide), so ``info`` has no ``"final_obs"``; it has
``"final_scores"`` (float32 [B, 4]) and ``"game_length"`` with their masks
``"_final_scores"`` and ``"_game_length"`` (valid where terminated). ``truncated`` is
always false. Every ``info`` also has ``"hand_over"`` (bool [B]). ``reset(seed=..., options=...)`` takes the options
``"deals"`` and ``"first_declarers"`` of ``VectorBarbu.reset`` (another key is a
``ValueError``); a ``reset()`` without a
seed continues the games' random streams from where the last seeded one left them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numba import njit

from ..agents import Agent, act_rows
from ..game import _kernels as K
from ..game._bits import popcount
from ..game.actions import AGENTS, NUM_ACTIONS, action_text
from ..game.constants import NUM_PLAYERS
from ..game.driver import serves_rows
from ..game.engine import episode_hands, hand_result
from ..game.observation import OBS_HIGH, OBS_LOW, observation_bounds
from ..game.position import Positions
from ..game.rules import Rules, load_rules
from ..game.vector import VectorBarbu
from ..util.files import quote
from .gym_env import RESET_OPTIONS, BarbuGymEnv, check_reset_options, check_seat_option, opponent_specs
from .stepping import check_illegal_action, play_instead

__all__ = ["AUTORESET_MODES", "BarbuGymVectorEnv", "BarbuVectorEnv"]

#: The autoreset modes ``BarbuGymVectorEnv`` offers (``autoreset_mode``).
AUTORESET_MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)


class BarbuVectorEnv(VectorEnv):
    """B self-play Barbu games as a Gymnasium ``VectorEnv`` (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self, num_envs: int, rules: Rules | str | dict | None = None, seed: int | None = None, episode: str = "game"
    ):
        self.games = VectorBarbu(num_envs, rules=rules, seed=seed, episode=episode)
        self.num_envs = self.games.num_games
        self.single_observation_space = spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._masks = np.zeros((self.num_envs, NUM_ACTIONS), dtype=bool)
        self._seat = np.zeros(self.num_envs, dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        check_reset_options(options, ("deals", "first_declarers"))
        obs, self._masks, self._seat = self.games.reset(
            seed=seed, deals=options.get("deals"), first_declarers=options.get("first_declarers")
        )
        return obs, {"action_mask": self._masks, "seat": self._seat}

    def step(self, actions):
        acted = self._seat
        obs, self._masks, self._seat, rewards, dones, infos = self.games.step(actions)
        reward = rewards[np.arange(self.num_envs), acted]
        info = {
            "action_mask": self._masks,
            "seat": self._seat,
            "rewards": rewards,
            "hand_over": infos["hand_over"],
            "final_scores": infos["final_scores"],
            "_final_scores": dones,
            "game_length": infos["game_length"],
            "_game_length": dones,
        }
        return obs, reward, dones, np.zeros(self.num_envs, dtype=bool), info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game's seat to act, bool [B, 85]."""
        return self._masks


# ---------------------------------------------------------------------- one learner against agents


@njit(_nrt=False)  # not cached on disk: compiled against the current kernels
def _step_rows(
    ints,
    cards,
    hblock,
    hblock64,
    preset,
    rp,
    rows,
    actions,
    obs,
    obs64,
    mask,
    seat,
    rewards,
    status,
    learner,
    waiting,
    pending,
):
    """Apply ``actions[i]`` in the games ``rows`` only (the others do not move). Per row:
    ``status[i]`` 0, 1 (a hand ended: ``rewards[i]`` its settled scores) or 2 (the episode
    ended: the game is left over, not reset); the learner's settled score added to
    ``pending[i]``; the next decision where there is one, and ``waiting[i]``: it is not
    the learner's, or it is forced and ``learner[i]`` < 0 (``skip_forced``: the learner's
    seat is stored as ``seat - 4``). Returns the number of rows that ended a hand."""
    ended = 0
    for k in range(rows.shape[0]):
        i = rows[k]
        me = learner[i]
        own = me + 4 if me < 0 else me
        for p in range(4):
            rewards[i, p] = 0.0
        s = K._apply(ints, cards, preset, rp, rewards, i, actions[i])
        status[i] = s
        if s > 0:
            ended += 1
            pending[i] += rewards[i, own]
        if s < 2:
            K._write_decision(ints, cards, hblock, hblock64, rp, obs, obs64, mask, i)
            cur = ints[i, K.F_CUR]
            seat[i] = cur
            forced = me < 0 and popcount(cards[i, K.K_LEGAL_LO]) + popcount(cards[i, K.K_LEGAL_HI]) == 1
            waiting[i] = cur != own or forced
        else:
            waiting[i] = False
    return ended


class BarbuGymVectorEnv(VectorEnv):
    """N games of ``"Barbu-v1"`` stepped in one batch (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 1,
        opponents: str | Agent | Sequence[str | Agent] = "random",
        seat: int | str = 0,
        rules: Rules | str | dict | None = None,
        reward_scale: float = 1.0,
        skip_forced: bool = False,
        illegal_action: str = "random",
        render_mode: str | None = None,
        episode: str = "game",
        hand_results: bool = False,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
    ):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (render a game with Barbu-v1), not {quote(render_mode)}")
        if seat != "rotate" and (isinstance(seat, bool) or seat not in range(NUM_PLAYERS)):
            raise ValueError(f"seat must be 0-3 or 'rotate', not {quote(seat)}")
        check_illegal_action(illegal_action, default="random")
        specs = opponent_specs(opponents)
        episode_hands(episode)  # an unknown mode fails here, not at reset
        mode = AutoresetMode(autoreset_mode)
        if mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]}, not {mode.value}")
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        N = self.num_envs = int(num_envs)
        self.rules = load_rules(rules)
        self.episode = episode
        self.opponent_specs = specs
        self.seat_option = seat
        self.reward_scale = float(reward_scale)
        self.skip_forced = bool(skip_forced)
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.hand_results = bool(hand_results)
        self.single_observation_space = spaces.Box(*observation_bounds(self.rules), dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, N)
        self.action_space = batch_space(self.single_action_space, N)
        # An unknown name or a missing file fails here; agents that answer row by row are told their seat's name.
        self._named_rows = any(serves_rows(a) for a in self._make_opponents(list(range(NUM_PLAYERS - 1))))
        self.games = VectorBarbu(N, rules=self.rules, episode=episode, copy=False)
        self._rows = np.arange(N)
        self._rngs: list[np.random.Generator | None] = [None] * N  # each sub-environment's np_random
        self._seat = np.full(N, seat if isinstance(seat, int) else 0, dtype=np.int64)
        self._next_seat = np.zeros(N, dtype=np.int64)
        self._table = np.full((N, NUM_PLAYERS), None, dtype=object)  # [game, seat]: the opponent agents
        # [game, seat]: act_rows' group of the agent (numbered once, as driver.Seated does: grouping costs per row)
        self._groups = np.zeros((N, NUM_PLAYERS), dtype=np.int64)
        self._group_ids: dict[tuple[str, Any], int] = {}
        # The learner's seat, less 4 with skip_forced (its forced decisions are played for it), for _step_rows.
        self._learner_code = np.zeros(N, dtype=np.int64)
        self._waiting = np.zeros(N, dtype=bool)  # the games whose decision is not the learner's to make
        self._pending = np.zeros(N, dtype=np.float64)  # the learner's scores since its latest decision
        self._status = np.zeros(N, dtype=np.int64)
        self._actions = np.zeros(N, dtype=np.int64)
        self._ended = np.zeros(N, dtype=bool)  # NEXT_STEP: the episode ended at the last step; the next one resets
        self._has_reset = False

    # ------------------------------------------------------------------ API

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        options = dict(options or {})
        check_reset_options(options, (*RESET_OPTIONS, "reset_mask"))
        reset_mask = options.pop("reset_mask", None)
        N = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            super().reset(seed=None if seed is None else int(seed))
            seeds = [None] * N if seed is None else [int(seed) + i for i in range(N)]
        else:
            seeds = list(seed)
        rows = self._rows
        if reset_mask is not None:
            reset_mask = np.asarray(reset_mask, dtype=bool)
            if not self._has_reset and not reset_mask.all():
                raise RuntimeError("the first reset() resets every sub-environment")
            rows = np.flatnonzero(reset_mask)
        check_seat_option(options)
        for i in rows.tolist():
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(seeds[i])
        self._start(rows, [seeds[i] is not None for i in rows.tolist()], options)
        self._ended[rows] = False
        self._has_reset = True
        results: list[list[dict]] = [[] for _ in range(N)]
        self._advance(results, np.zeros(N, dtype=bool), np.zeros(N), np.zeros((N, NUM_PLAYERS), dtype=np.int64))
        self._pending[rows] = 0.0  # scores before the learner's first decision belong to none of its decisions
        return self.games._obs.copy(), self._info(results, None, None)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        N, masks = self.num_envs, self.games._masks
        actions = np.asarray(actions).astype(np.int64).reshape(N)
        outside = ((actions < 0) | (actions >= NUM_ACTIONS)) & ~self._ended  # an ended row's action is ignored
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(f"sub-environment {i}: action {int(actions[i])} is not in Discrete({NUM_ACTIONS})")
        ended = self._ended.copy()  # NEXT_STEP: these reset now, their actions ignored
        valid = (actions >= 0) & (actions < NUM_ACTIONS)
        illegal = ~(valid & masks[self._rows, np.where(valid, actions, 0)]) & ~ended
        for i in np.flatnonzero(illegal).tolist():  # "raise": the first; "random": as Barbu-v1, from its generator
            actions[i] = self._instead(i, int(actions[i]), masks[i])
        results: list[list[dict]] = [[] for _ in range(N)]
        terminated = np.zeros(N, dtype=bool)
        rewards = np.zeros(N, dtype=np.float64)
        scores = np.zeros((N, NUM_PLAYERS), dtype=np.int64)
        if ended.any():
            self._ended[:] = False
            self._start(np.flatnonzero(ended), [False] * int(ended.sum()), {})
        self._apply(np.flatnonzero(~ended), actions, results, terminated, rewards, scores)
        self._advance(results, terminated, rewards, scores)
        rewards = np.where(terminated, rewards, self._pending) * self.reward_scale
        rewards[ended] = 0.0  # a reset is no decision: the new game's scores before its first belong to none
        self._pending[:] = 0.0  # (on a terminated row: the new game's scores before its first decision)
        info = self._info(results, terminated, scores)
        if illegal.any():
            info["illegal_action"] = illegal
            info["_illegal_action"] = illegal.copy()
        return self.games._obs.copy(), rewards, terminated, np.zeros(N, dtype=bool), info

    def _instead(self, i: int, action: int, mask: np.ndarray) -> int:
        """The action sub-environment ``i`` plays for its illegal ``action`` (``illegal_action``)."""
        legal = np.flatnonzero(mask).tolist()
        what = f"{action} ({action_text(action)})" if 0 <= action < NUM_ACTIONS else repr(action)
        named = ", ".join(f"{b} ({action_text(b)})" for b in legal)
        refusal = f"sub-environment {i}: action {what} is illegal for seat {self._seat[i]}; legal actions: {named}"
        return play_instead(self.illegal_action, legal, self._rngs[i], lambda: refusal)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions in every game, bool [N, 85]."""
        return self.games._masks.copy()

    # ------------------------------------------------------------------ internals

    _make_opponents, _draw_game = BarbuGymEnv._make_opponents, BarbuGymEnv._draw_game

    def _start(self, rows: np.ndarray, seeded: list[bool], options: dict[str, Any]) -> None:
        """A new game in each of ``rows``, drawn from the sub-environment's generator as
        ``Barbu-v1``'s ``reset`` draws it, loaded into the batch."""
        if not len(rows):
            return
        parts = []
        for i, fresh in zip(rows.tolist(), seeded):
            learner, self._next_seat[i], opponents, game = self._draw_game(
                self._rngs[i], int(self._seat[i]), int(self._next_seat[i]), fresh, options
            )
            self._seat[i] = learner
            for k, agent in enumerate(opponents):
                other = (learner + 1 + k) % NUM_PLAYERS
                self._table[i, other] = agent
                key = getattr(agent, "batch_key", None)
                self._groups[i, other] = self._group_ids.setdefault(
                    ("object", id(agent)) if key is None else ("group", key), len(self._group_ids)
                )
            self._table[i, learner] = None
            parts.append(Positions.from_state(game))
        _, masks, seat = self.games.load(Positions.concatenate(parts), rows)
        self._pending[rows] = 0.0
        self._learner_code[rows] = self._seat[rows] - (NUM_PLAYERS if self.skip_forced else 0)
        waiting = seat[rows] != self._seat[rows]
        if self.skip_forced:
            waiting |= masks[rows].sum(axis=1) == 1
        self._waiting[rows] = waiting

    def _apply(
        self,
        rows: np.ndarray,
        actions: np.ndarray,
        results: list[list[dict]],
        terminated: np.ndarray,
        rewards: np.ndarray,
        scores: np.ndarray,
    ) -> None:
        """Step ``rows`` with ``actions[rows]``; credit the learners' scores, note the
        hands that ended and the episodes, and start the next game where one ended."""
        g = self.games
        status = self._status
        if not _step_rows(
            *g._games,
            g._rp,
            rows,
            actions,
            *g._decisions,
            g._rewards,
            status,
            self._learner_code,
            self._waiting,
            self._pending,
        ):
            return  # no hand ended
        st = status[rows]
        if self.hand_results:
            ints, cards = g._ints, g._cards
            for i in rows[st > 0].tolist():
                if not terminated[i]:  # (a game begun in this step keeps its hands to itself)
                    results[i].append(hand_result(ints[i], cards[i]).to_dict())
        over = rows[st == 2]
        if not len(over):
            return
        again = over[terminated[over]]  # a new game that ended before the learner's first decision
        over = over[~terminated[over]]
        terminated[over] = True
        rewards[over] = self._pending[over]
        scores[over] = g._ints[over, K.F_SCORES : K.F_SCORES + NUM_PLAYERS]
        if self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP:
            for i in over.tolist():  # the learner's view of the finished game, as Barbu-v1's last step returns it
                K._write_obs(*g._games[:4], g._rp, g._decisions.obs, g._decisions.obs64, i, int(self._seat[i]))
            g._masks[over] = False
            self._ended[over] = True
            over = over[:0]
        self._start(np.concatenate([over, again]), [False] * (len(over) + len(again)), {})

    def _advance(self, results, terminated, rewards, scores) -> None:
        """Play every game's opponents (and, with ``skip_forced``, the learner's forced
        moves) in batch until each game is at a learner decision."""
        g = self.games
        masks, seat, obs = g._masks, g._seat, g._obs
        actions = self._actions
        N = self.num_envs
        while True:
            rows = np.flatnonzero(self._waiting)
            if not len(rows):
                return
            asked = rows
            if self.skip_forced:
                own = seat[rows] == self._seat[rows]
                asked = rows[~own]
                actions[rows[own]] = masks[rows[own]].argmax(axis=1)
            if len(asked):
                seats = seat[asked]
                whole = len(asked) == N  # every game: the engine's own buffers, no gathering
                actions[asked] = act_rows(
                    self._table[asked, seats].tolist(),
                    obs if whole else obs[asked],
                    (masks if whole else masks[asked]).view(np.int8),
                    [AGENTS[s] for s in seats.tolist()] if self._named_rows else None,
                    self._groups[asked, seats],
                )
            self._apply(rows, actions, results, terminated, rewards, scores)

    def _info(self, results, terminated, scores) -> dict[str, Any]:
        N = self.num_envs
        every = np.ones(N, dtype=bool)
        info: dict[str, Any] = {
            "action_mask": self.games._masks.view(np.int8).copy(),
            "_action_mask": every,
            "seat": self._seat.copy(),
            "_seat": every.copy(),
        }
        have = np.array([bool(r) for r in results])
        if have.any():
            column = np.empty(N, dtype=object)
            column[:] = results
            info["hand_results"] = column
            info["_hand_results"] = have
        if terminated is not None and terminated.any():
            info["scores"] = scores
            info["_scores"] = terminated.copy()
        return info
