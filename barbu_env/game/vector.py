"""The batched engine: B complete Barbu games stepped together, for training.

``VectorBarbu(num_games, rules=..., seed=..., episode="game")`` holds B games as structure-of-arrays
and steps them all with one call into numba-compiled kernels (``barbu_env.game._kernels``).
Each game follows the rules (docs/rules.md) under every switch of ``Rules``, and each decision's
observation and mask are exactly, bit for bit, what the AEC environment
(``barbu_env.env()``, the same kernels) gives the seat to act: ``tests/test_oracle.py``
plays games through both and the tests' oracle engine and compares every decision.

``reset(seed=None, deals=None, first_declarers=None)`` returns ``(obs, masks, seat)``
and ``step(actions)`` returns ``(obs, masks, seat, rewards, dones, infos)``:

=============  =================  ==========================================================
name           type               meaning
=============  =================  ==========================================================
``obs``        float32 [B, 1132]  observation of the seat to act in each game (or [B, 4152])
``masks``      bool [B, 85]       its legal actions
``seat``       int64 [B]          the seat to act (0-3)
``actions``    int [B]            (``step``'s argument) the action of ``seat[i]`` in game i
``rewards``    float32 [B, 4]     settled hand scores per seat that arrived with this step
``dones``      bool [B]           this step ended game i's episode (already reset)
``infos``      dict of arrays     ``hand_over``, ``final_scores``, ``game_length`` (below)
=============  =================  ==========================================================

* ``obs[i]`` is the observation of ``seat[i]``, the seat to act in game i, and
  ``masks[i]`` its legal actions (``observation.OBS_DIM`` values laid out as
  ``observation.SLICES``; actions as in docs/rules.md). Every decision is a turn, forced ones
  included, as in the AEC environment.
* ``actions[i]`` is the action of ``seat[i]`` in game i. An illegal action raises
  ``IllegalActionError`` naming the game, the action and the legal ones, and changes no
  game (all actions are checked before any is applied).
* ``rewards[i, p]`` is seat p's settled score of a hand that ended with this step (0
  otherwise), exactly the AEC environment's rewards at that step. Rewards reach all
  four seats, not only the one that acted.
* ``dones[i]``: this step ended game i: its 28th hand, or the last hand of its episode
  (``episode``, below). The slot is reset at once: a new game
  is dealt from the slot's random stream with a random first declarer, and ``obs[i]``,
  ``masks[i]``, ``seat[i]`` already belong to the new game's first decision (its
  declarer choosing a contract). There is no terminal observation: a finished game
  has no decision left, and every seat's value there is 0. (Gymnasium calls this
  autoreset mode "same step".)
* ``infos``: ``"hand_over"`` bool [B], this step ended a hand (``rewards[i]`` holds its
  settled scores, possibly zeros); ``"final_scores"`` float32 [B, 4], the totals of the
  game (episode) that ended, valid where ``dones``; ``"game_length"`` int64 [B], the
  decisions of that game (episode), valid where ``dones``.

Information state: ``VectorBarbu(..., observation="information_state")`` writes, in place of each observation,
the seat's information state (``observation.INFO_SLICES``; ``obs_dim`` gives the width):
docs/vector.md#information-states.

Episodes: ``episode="game"`` (the default) plays whole games of 28 hands;
``"round"`` only their first seven hands (one declarer's seven under the default
rotation), ``"hand"`` only their first hand, declaration included
(``constants.EPISODE_HANDS``, docs/rules.md#episodes). A short episode is exactly the
start of the whole game with the same deals, first declarer and actions (every
observation, mask and reward up to its last hand, the observation still counting 28
hands) and ends, with ``dones``, when its last hand settles; ``"final_scores"`` are
the totals of its hands. A position ``load``-ed into a slot plays to the end of the
slot's episode: the hand it is in for ``"hand"``, the end of its group of seven hands
(hands 1-7, 8-14, ...) for ``"round"``.

Per-seat bookkeeping for a learner: ``barbu_env.game.credit`` (each seat's decision
collects its rewards up to its next decision, or to ``dones[i]``, which closes all four
seats' decisions as terminal).

Seeding: the deals and the first declarers come from one splitmix64 stream per game
slot, seeded from ``numpy.random.SeedSequence(seed)`` (slot i's games depend only on
the seed and i, not on B, as long as the actions are the same). ``reset(seed=s)``
replays the same games; ``reset()`` without a seed continues the streams (the first
``reset`` uses the constructor's ``seed``). These deals are not the
AEC environment's for the same seed: to play the same games in both, pass ``deals``
(and ``first_declarers``) to both. Given deals serve the games started by that
``reset`` only; games started by an automatic reset are dealt from the stream.

Returned arrays: with ``copy=True`` (the default) each call returns fresh arrays;
``copy=False`` returns the environment's own buffers, overwritten by the next call,
which saves a copy of ``obs`` per step where the caller copies it into its own
storage anyway.

The kernels are compiled on first use and cached on disk; why numba rather than numpy,
and the measurements behind their design: docs/vector.md.

The module is engine-pure: numpy and numba, no RL framework.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..util.files import quote
from . import _kernels as K
from ._kernels import rules_params
from .actions import NUM_ACTIONS, action_text, actions_of
from .constants import NUM_HANDS, NUM_PLAYERS
from .engine import IllegalActionError, episode_hands, parse_deal
from .observation import INFO_DIM, OBS_DIM
from .position import Positions
from .rules import Rules, load_rules

__all__ = ["OBSERVATIONS", "VectorBarbu", "rules_params"]

#: The choices of ``observation``: the width of the vectors each gives.
OBSERVATIONS = {"observation": OBS_DIM, "information_state": INFO_DIM}


class VectorBarbu:
    """B Barbu games stepped together (see the module docstring)."""

    def __init__(
        self,
        num_games: int,
        rules: Rules | str | dict | None = None,
        seed: int | None = None,
        copy: bool = True,
        episode: str = "game",
        observation: str = "observation",
    ):
        B = self.num_games = int(num_games)
        self.rules = load_rules(rules)
        episode_length = episode_hands(episode)  # an unknown mode fails here
        self.episode = episode  # the episode mode (module docstring)
        self.copy = copy
        self.observation = observation  # what obs holds (module docstring)
        self._obs_dim = OBSERVATIONS[observation]
        self._rp = rules_params(self.rules)
        self._seed = seed
        self._seeded = False
        # The games' state (see _kernels' docstring), every slot's episode length set for good.
        self._games = K.new_games(B, episode_length)
        self._ints, self._cards, self._preset = self._games.ints, self._games.cards, self._games.preset
        # Outputs, rewritten by every call.
        obs = np.zeros((B, self._obs_dim), dtype=np.float32)
        self._decisions = K.Decisions(
            obs, obs.view(np.uint64), np.zeros((B, NUM_ACTIONS), dtype=bool), np.zeros(B, dtype=np.int64)
        )
        self._obs, _, self._masks, self._seat = self._decisions
        self._outcomes = K.Outcomes(
            np.zeros((B, NUM_PLAYERS), dtype=np.float32),
            np.zeros(B, dtype=bool),
            np.zeros(B, dtype=bool),
            np.zeros((B, NUM_PLAYERS), dtype=np.float32),
            np.zeros(B, dtype=np.int64),
        )
        self._rewards, self._dones, self._hand_over, self._final_scores, self._lengths = self._outcomes
        self._has_reset = False

    @property
    def obs_dim(self) -> int:
        """The width of ``obs``: ``OBS_DIM``, or ``INFO_DIM`` for the information state."""
        return self._obs_dim

    # ------------------------------------------------------------------ API

    def reset(
        self,
        seed: int | None = None,
        deals: Sequence | np.ndarray | None = None,
        first_declarers: int | Sequence[int | None] | None = None,
    ):
        """Start a new game in every slot. Returns ``(obs, masks, seat)``.

        ``deals``: None, or per game None or a list of up to 28 deals as the AEC
        environment's ``"deals"`` option takes them (four lists of 13 cards, ids or
        text), or an int array [B, H, 4, 13] of card ids. ``first_declarers``: None, one
        seat for every game, or per game a seat or None (None or -1: drawn)."""
        preset, n_preset = self._parse_deals(deals)  # errors before anything changes
        first = self._parse_first(first_declarers)
        if seed is not None or not self._seeded:
            self._seed_streams(self._seed if seed is None else seed)
        self._preset[:] = preset
        K.reset_games(*self._games, self._rp, n_preset, first, *self._decisions)
        self._has_reset = True
        return self._out(self._obs), self._out(self._masks), self._out(self._seat)

    def step(self, actions):
        """Apply ``actions[i]`` in every game i. Returns ``(obs, masks, seat, rewards,
        dones, infos)`` as the module docstring says."""
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_games,) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_games} ints, not {actions.dtype} of shape {actions.shape}")
        actions = np.ascontiguousarray(actions, dtype=np.int64)  # one compiled signature
        bad = K.step_games(*self._games, self._rp, actions, *self._decisions, *self._outcomes)
        if bad >= 0:  # nothing was applied
            raise IllegalActionError(self._illegal_message(bad, int(actions[bad])))
        out = self._out
        infos = {
            "hand_over": out(self._hand_over),
            "final_scores": out(self._final_scores),
            "game_length": out(self._lengths),
        }
        return out(self._obs), out(self._masks), out(self._seat), out(self._rewards), out(self._dones), infos

    def load(self, positions: Positions, slots: Sequence[int] | np.ndarray | None = None):
        """Put ``positions`` (``barbu_env.game.position.Positions``) into ``slots`` (default:
        every slot, one position each) and return ``(obs, masks, seat)`` of every slot,
        as ``reset`` does. A loaded game goes on exactly from its position: its later
        hands come from the position's deals where it has them, else from the slot's
        random stream; when it ends (the end of the slot's episode: see the module
        docstring), the slot starts a new game as usual."""
        slots = np.arange(self.num_games) if slots is None else np.asarray(slots, dtype=np.int64).reshape(-1)
        if not self._seeded:
            self._seed_streams(self._seed)
        K.load_games(
            *self._games,
            self._rp,
            slots,
            np.ascontiguousarray(positions.ints, dtype=np.int64),
            np.ascontiguousarray(positions.cards, dtype=np.uint64),
            np.ascontiguousarray(positions.preset, dtype=np.uint64),
            *self._decisions,
        )
        self._has_reset = True
        return self._out(self._obs), self._out(self._masks), self._out(self._seat)

    def positions(self, slots: Sequence[int] | np.ndarray | None = None) -> Positions:
        """The games in ``slots`` (default: all) as they stand, exactly, for ``load``."""
        slots = np.arange(self.num_games) if slots is None else np.asarray(slots, dtype=np.int64).reshape(-1)
        hands = self._cards[slots, K.K_HANDS : K.K_HANDS + NUM_PLAYERS]
        sizes = np.array([[int(h).bit_count() for h in row] for row in hands.tolist()], dtype=np.int64).reshape(
            -1, NUM_PLAYERS
        )
        return Positions(
            self._ints[slots].copy(),
            self._cards[slots].copy(),
            self._preset[slots].copy(),
            self._seat[slots].copy(),
            sizes,
        )

    def other_hands(self) -> np.ndarray:
        """Per game, the hands of the three players other than the seat to act, in
        relative seat order 1, 2, 3: float32 [B, 156], what a privileged critic
        appends to the observation (for a critic, never for acting)."""
        out = np.empty((self.num_games, 3 * 52), dtype=np.float32)
        K.other_hands(self._ints, self._cards, out.view(np.uint64))
        return out

    def scores(self) -> np.ndarray:
        """Game totals so far per game and seat, int64 [B, 4]."""
        return self._ints[:, K.F_SCORES : K.F_SCORES + NUM_PLAYERS].copy()

    def hand_numbers(self) -> np.ndarray:
        """The 0-based hand each game is in, int64 [B]."""
        return self._ints[:, K.F_HAND].copy()

    def last_hands(self) -> dict[str, np.ndarray]:
        """Per game, the result of the last hand it finished (a step's
        ``infos["hand_over"]`` says which games finished one; a game ended by the step
        keeps its last hand's result through the automatic reset, until its new game
        finishes a hand): ``"hand"`` (0-27), ``"declarer"`` and ``"contract"``
        (``Contract``) int64 [B]; ``"raw"`` and ``"settled"`` scores per seat int64 [B, 4];
        ``"doubles"`` int8 [B, 4, 4]: ``[i, j]`` = 1 if seat i doubled seat j in that hand, 2 if
        it redoubled j (named j after j had named it), else 0. Meaningless for a game that
        has not finished a hand."""
        g, bits = self._ints, np.arange(NUM_PLAYERS)
        named = (g[:, K.F_REC_NAMED : K.F_REC_NAMED + NUM_PLAYERS, None] >> bits) & 1
        redoubled = (g[:, K.F_REC_REDOUBLED : K.F_REC_REDOUBLED + NUM_PLAYERS, None] >> bits) & 1
        return {
            "doubles": (named + redoubled).astype(np.int8),
            "hand": g[:, K.F_REC_HAND].copy(),
            "declarer": g[:, K.F_REC_DECLARER].copy(),
            "contract": g[:, K.F_REC_CONTRACT].copy(),
            "raw": g[:, K.F_REC_RAW : K.F_REC_RAW + NUM_PLAYERS].copy(),
            "settled": g[:, K.F_REC_SETTLED : K.F_REC_SETTLED + NUM_PLAYERS].copy(),
        }

    # ------------------------------------------------------------------ helpers

    def _seed_streams(self, seed: int | None) -> None:
        """One splitmix64 stream per slot from ``SeedSequence(seed)`` (see the module docstring)."""
        self._cards[:, K.K_RNG] = np.random.SeedSequence(seed).generate_state(self.num_games, dtype=np.uint64)
        self._seeded = True

    def _out(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self.copy else a

    def _parse_deals(self, deals) -> tuple[np.ndarray, np.ndarray]:
        """``deals`` as card sets [B, 28, 4] and the number of deals per game."""
        B = self.num_games
        preset = np.zeros((B, NUM_HANDS, NUM_PLAYERS), dtype=np.uint64)
        n = np.zeros(B, dtype=np.int64)
        if deals is None:
            return preset, n
        if isinstance(deals, np.ndarray) and np.issubdtype(deals.dtype, np.integer):
            if deals.ndim != 4 or deals.shape[0] != B or deals.shape[1] > NUM_HANDS or deals.shape[2:] != (4, 13):
                raise ValueError(f"a deals array has shape [B={B}, hands<=28, 4, 13], not {deals.shape}")
            deals = deals.tolist()
        if isinstance(deals, (str, bytes)) or len(deals) != B:
            raise ValueError(f"deals must give one entry (None or a list of deals) per game, {B} in all")
        for i, game_deals in enumerate(deals):
            if game_deals is None:
                continue
            if isinstance(game_deals, (str, bytes)) or len(game_deals) > NUM_HANDS:
                raise ValueError(f"game {i}: deals must be a list of at most {NUM_HANDS} deals")
            for h, deal in enumerate(game_deals):
                preset[i, h] = parse_deal(deal)
            n[i] = len(game_deals)
        return preset, n

    def _parse_first(self, first) -> np.ndarray:
        B = self.num_games
        if first is None:
            return np.full(B, -1, dtype=np.int64)
        if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
            values = [int(first)] * B
        else:
            values = [-1 if f is None else f for f in first]
            if len(values) != B:
                raise ValueError(f"first_declarers must give one seat (or None) per game, {B} in all")
        for f in values:
            if isinstance(f, bool) or f not in range(-1, NUM_PLAYERS):
                raise ValueError(f"a first declarer is a seat 0-3 (or None / -1: drawn), not {quote(f)}")
        return np.array(values, dtype=np.int64)

    def _illegal_message(self, game: int, action: int) -> str:
        lo, hi = (int(x) for x in self._cards[game, [K.K_LEGAL_LO, K.K_LEGAL_HI]])
        legal = lo | hi << 64
        what = f"{action} ({action_text(action)})" if 0 <= action < NUM_ACTIONS else repr(action)
        options = ", ".join(f"{a} ({action_text(a)})" for a in actions_of(legal))
        return f"illegal action {what} in game {game} for seat {self._seat[game]}; legal actions: {options}"
