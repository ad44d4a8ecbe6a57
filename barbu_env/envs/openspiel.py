"""Barbu as an OpenSpiel game: ``python_barbu``, registered with ``pyspiel`` on import.

>>> import pyspiel
>>> game = pyspiel.load_game("python_barbu(rules=classic,episode=round)")
>>> game.num_players(), game.num_distinct_actions(), game.get_type().utility.name
(4, 85, 'ZERO_SUM')

What it is (docs/openspiel.md has the whole page):

* One engine: a state wraps a ``BarbuState`` (``state.barbu``, None while a hand is being
  dealt) and steps it with the engine's ``apply_action``; the action ids are the engine's
  85. An action that is not an integer of 0..84, or an illegal one, is
  ``IllegalActionError`` (a ``ValueError``) naming it; an impossible chance outcome is a
  ``ValueError``.
* Explicit chance, card by card: the first node draws the first declarer (outcomes 0-3,
  1/4 each); every hand then starts with 52 chance nodes, the k-th dealing a card (the
  outcome is its id, uniform over the cards not yet dealt) to seat ``k % 4``.
* Parameters: ``rules`` (a preset name), ``episode`` ("game", "round", "hand"),
  ``rewards`` ("hand": REWARDS, each hand's settled scores as it ends; "terminal":
  TERMINAL, the episode's total at its end, as OpenSpiel's MCTS bot requires) and every
  ``Rules`` switch, the tuples as ``;``-separated integers (``no_last_two_points=-15;-15``);
  a switch at its standard value takes the preset's value, any other value overrides it.
  ``str(game)`` loads the same game. Utility: ``utility_of``.
* Tensors from ``make_py_observer``: perfect_recall=False is the observation
  (``observation.OBS_DIM``), True the information state (``observation.INFO_DIM``), written
  in place at each ``set_from``; strings are ``barbu_env.envs.tensor_text.describe`` of it.
  At a dealing node the player holds only the cards dealt to it so far.
* ``resample_from_infostate`` redeals the other three hands uniformly among those
  consistent with the player's information (``barbu_env.game.worlds``), for search; the
  copy keeps the original's ``history()``.
* ``state_from_engine(game, barbu_state)``: a state continuing from an engine state.

Only this module imports ``pyspiel`` (the ``openspiel`` extra: ``pip install -c
constraints.txt -e ".[openspiel]"`` in a clone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..game import _kernels as K
from ..game.actions import NUM_ACTIONS, action_text
from ..game.cards import FULL_DECK, NUM_CARDS, card_text, cards_of, hand_text
from ..game.constants import CARDS_PER_HAND, EPISODE_HANDS, NUM_CONTRACTS, NUM_PLAYERS
from ..game.engine import BarbuState, action_id, contract_total, episode_hands
from ..game.observation import INFO_DIM, INFO_OFFSETS, OBS_DIM, OFFSETS
from ..game.rules import Rules, RulesError, load_rules, preset_names
from ..game.worlds import sample_worlds
from ..util.extras import require
from ..util.files import quote
from .tensor_text import describe

pyspiel = require("pyspiel", "openspiel", "barbu_env.envs.openspiel", package="open_spiel")  # one line if missing

GAME_NAME = "python_barbu"
#: Chance outcomes: a seat (the first declarer, 0-3) or a card (0-51).
MAX_CHANCE_OUTCOMES = NUM_CARDS
#: Chance nodes of a hand: one per card.
DEAL_NODES = NUM_CARDS
#: The most decisions a hand can take: the declaration, the trump or Domino rank, at most
#: 7 doubling turns (4, then at most 3 redouble passes), then 52 cards in trick play, or in
#: Domino at most 52 placements each after at most 3 passes.
MAX_HAND_DECISIONS = 1 + 1 + 7 + NUM_CARDS * (1 + 3)
#: Strings an observer remembers (``BarbuObserver.string_from``), a few KB each.
STRING_CACHE = 4096
#: Tuple switches as parameters: their values joined by this (a comma separates parameters).
TUPLE_SEPARATOR = ";"
_SWITCHES = tuple(f.name for f in dataclasses.fields(Rules))
_TUPLE_SWITCHES = frozenset(f.name for f in dataclasses.fields(Rules) if f.type.startswith("tuple"))
_STANDARD = Rules()
#: ``_BYTE_CARDS[k][b]``: the card ids of the set bits of byte ``b`` at byte ``k`` (0-6) of a card set.
_BYTE_CARDS = tuple(tuple(tuple(8 * k + i for i in range(8) if b >> i & 1) for b in range(256)) for k in range(7))
#: ``_OUTCOMES[n][c]``: the chance outcome ``(c, 1/n)`` of card ``c`` with ``n`` cards left to deal.
_OUTCOMES = ((),) + tuple(tuple((c, 1.0 / n) for c in range(NUM_CARDS)) for n in range(1, NUM_CARDS + 1))
_PRIVATE_SLICES = ("hand", "dealt")
#: Values of the ``rewards`` parameter: per hand (OpenSpiel's REWARDS), or the episode's total at its end (TERMINAL).
REWARDS = ("hand", "terminal")


def _param_value(name: str, value: Any) -> Any:
    """A switch's value as a pyspiel parameter (tuples as ``;``-separated text)."""
    if name in _TUPLE_SWITCHES:
        return TUPLE_SEPARATOR.join(str(int(v)) for v in value)
    return value


def _switch_value(name: str, value: Any) -> Any:
    """A pyspiel parameter as the switch's value (``"-10;-20"`` or ``"-10,-20"`` as a tuple)."""
    if name in _TUPLE_SWITCHES and isinstance(value, str):
        parts = value.replace(",", TUPLE_SEPARATOR).replace(" ", TUPLE_SEPARATOR).split(TUPLE_SEPARATOR)
        try:
            return tuple(int(p) for p in parts if p)
        except ValueError:
            raise RulesError(
                f"rule {quote(name)} is integers separated by {TUPLE_SEPARATOR!r}, not {quote(value)}"
            ) from None
    return value


#: Parameters and their defaults: the standard rules, the whole game.
_PARAMETERS = {
    "rules": "standard",  # a preset (barbu_env/game/presets): the switches not given
    "episode": "game",  # "game" (28 hands), "round" (7) or "hand" (1)
    "rewards": "hand",  # "hand" (each hand's scores as it ends) or "terminal" (the episode's total at its end)
    **{name: _param_value(name, getattr(_STANDARD, name)) for name in _SWITCHES},  # docs/rules.md
}


def game_params(
    rules: Rules | str | Mapping | None = None, episode: str = "game", rewards: str = "hand"
) -> dict[str, Any]:
    """The pyspiel parameters of the game under ``rules`` (a ``Rules``, a preset name, a
    mapping of switches or None), ``episode`` and ``rewards`` (``REWARDS``): every switch explicit.

    >>> game_params("declarer_only", "hand")["no_last_two_points"]
    '-15;-15'
    """
    episode_hands(episode)
    _check_rewards(rewards)
    name = rules if isinstance(rules, str) and rules in _preset_set() else "standard"
    resolved = load_rules(rules)
    return {
        "rules": name,
        "episode": episode,
        "rewards": rewards,
        **{k: _param_value(k, getattr(resolved, k)) for k in _SWITCHES},
    }


def _check_rewards(rewards: Any) -> str:
    if rewards not in REWARDS:
        raise ValueError(f"parameter 'rewards' is one of {list(REWARDS)}, not {quote(rewards)}")
    return rewards


def _preset_set() -> set[str]:
    return set(preset_names()) | {"standard"}


def rules_of(params: Mapping[str, Any]) -> Rules:
    """The rules a parameter set means: the preset, then every switch not at its standard value."""
    preset = params.get("rules", "standard")
    if not isinstance(preset, str) or preset not in _preset_set():
        raise RulesError(f"parameter 'rules' is a preset, one of {sorted(_preset_set())}, not {quote(preset)}")
    base = load_rules(preset).to_dict()
    for name in _SWITCHES:
        if name in params:
            value = _switch_value(name, params[name])
            standard = getattr(_STANDARD, name)
            if (tuple(value) if isinstance(value, (list, tuple)) else value) != standard:
                base[name] = value
    return Rules.from_mapping(base)


def load_game(rules: Rules | str | Mapping | None = None, episode: str = "game", rewards: str = "hand") -> BarbuGame:
    """The OpenSpiel game of ``rules``, ``episode`` and ``rewards`` (``pyspiel.load_game`` of ``game_params``)."""
    return pyspiel.load_game(GAME_NAME, game_params(rules, episode, rewards))


# ---------------------------------------------------------------------- the game's description


def utility_of(rules: Rules, episode: str) -> tuple[pyspiel.GameType.Utility, float | None, float]:
    """(utility, utility sum or None, bound on a seat's return) of an episode.

    Doubling moves points between seats, so an episode's scores add up to the raw totals
    of the contracts it plays (``engine.contract_total``). A whole game plays each contract
    four times (each seat declares each once), a round under ``seven_in_a_row`` each once:
    their sum is fixed. Otherwise the declarers choose the contracts, and the sum is
    fixed only if every contract's total is the same."""
    hands = episode_hands(episode)
    totals = [contract_total(rules, c) for c in range(NUM_CONTRACTS)]
    bounds = rules.hand_bounds()
    if hands == EPISODE_HANDS["game"]:
        total, bound = 4 * sum(totals), rules.score_bound()
    elif hands == EPISODE_HANDS["round"] and rules.rotation == "seven_in_a_row":
        total, bound = sum(totals), sum(bounds)
    else:
        total = hands * totals[0] if len(set(totals)) == 1 else None
        bound = min(hands * max(bounds), rules.score_bound())
    if total is None:
        return pyspiel.GameType.Utility.GENERAL_SUM, None, float(bound)
    kind = pyspiel.GameType.Utility.ZERO_SUM if total == 0 else pyspiel.GameType.Utility.CONSTANT_SUM
    return kind, float(total), float(bound)


def _game_type(utility: pyspiel.GameType.Utility, rewards: str = "hand") -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=GAME_NAME,
        long_name="Barbu",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=utility,
        reward_model=(
            pyspiel.GameType.RewardModel.TERMINAL if rewards == "terminal" else pyspiel.GameType.RewardModel.REWARDS
        ),
        max_num_players=NUM_PLAYERS,
        min_num_players=NUM_PLAYERS,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=_PARAMETERS,
    )


def _game_info(rules: Rules, episode: str) -> pyspiel.GameInfo:
    _, total, bound = utility_of(rules, episode)
    return pyspiel.GameInfo(
        num_distinct_actions=NUM_ACTIONS,
        max_chance_outcomes=MAX_CHANCE_OUTCOMES,
        num_players=NUM_PLAYERS,
        min_utility=-bound,
        max_utility=bound,
        utility_sum=total,
        # The first declarer, then per hand 52 deals and its decisions.
        max_game_length=1 + episode_hands(episode) * (DEAL_NODES + MAX_HAND_DECISIONS),
    )


class BarbuGame(pyspiel.Game):
    """``python_barbu``: Barbu under ``rules`` for an ``episode`` (module docstring)."""

    def __init__(self, params: Mapping[str, Any] | None = None):
        params = dict(params or {})
        rules = rules_of(params)
        episode = params.get("episode", "game")
        episode_hands(episode)
        rewards = _check_rewards(params.get("rewards", "hand"))
        utility, _, _ = utility_of(rules, episode)
        resolved = {**params, **{k: _param_value(k, getattr(rules, k)) for k in _SWITCHES}}
        resolved.setdefault("rules", "standard")
        resolved["episode"] = episode
        resolved["rewards"] = rewards
        # The game type is this instance's: its utility and reward model follow the parameters.
        super().__init__(_game_type(utility, rewards), _game_info(rules, episode), resolved)
        self.rules = rules
        self.episode = episode
        self.rewards = rewards
        self._setup = _Setup(rules, episode, rewards == "terminal")

    def new_initial_state(self) -> BarbuSpielState:
        return BarbuSpielState(self)

    def make_py_observer(self, iig_obs_type: pyspiel.IIGObservationType | None = None, params=None) -> BarbuObserver:
        """The observer of ``iig_obs_type`` (``BarbuObserver``; the default: the observation)."""
        if isinstance(iig_obs_type, Mapping):  # OpenSpiel's C++ calls make_py_observer(params) for the default
            iig_obs_type = None
        return BarbuObserver(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False))


class _Setup:
    """What every state of one game shares: the rules and the episode."""

    __slots__ = ("rules", "episode", "terminal")

    def __init__(self, rules: Rules, episode: str, terminal: bool = False):
        self.rules, self.episode, self.terminal = rules, episode, terminal


class _Core:
    """A state's data: OpenSpiel clones a Python state by deep-copying its ``__dict__``,
    which holds only this, and this copies as the engine state's ``clone()``."""

    __slots__ = ("setup", "engine", "first", "deal", "ndealt", "rewards", "returns")

    def __init__(self, setup: _Setup):
        self.setup = setup
        self.engine: BarbuState | None = None  # after the first declarer is drawn
        self.first = -1  # the first declarer, -1 before it is drawn
        self.deal = (0, 0, 0, 0)  # the cards dealt to each seat so far this hand
        self.ndealt = 0  # cards dealt this hand (52 once it is dealt)
        self.rewards = (0.0,) * NUM_PLAYERS
        self.returns = (0.0,) * NUM_PLAYERS

    def __deepcopy__(self, memo) -> _Core:
        c = _Core.__new__(_Core)
        c.setup, c.first, c.deal, c.ndealt = self.setup, self.first, self.deal, self.ndealt
        c.rewards, c.returns = self.rewards, self.returns
        c.engine = self.engine.clone() if self.engine is not None else None
        return c


# ---------------------------------------------------------------------- the state


class BarbuSpielState(pyspiel.State):
    """A state of ``python_barbu``: chance (the first declarer, then each hand's 52 cards)
    and the engine's decisions. ``barbu`` is the engine state (None while a hand is dealt)."""

    def __init__(self, game: BarbuGame):
        super().__init__(game)
        self._core = _Core(game._setup)

    # -------------------------------------------------------------- the engine state

    @property
    def barbu(self) -> BarbuState | None:
        """The engine state; None while a hand is being dealt."""
        core = self._core
        return core.engine if core.ndealt == DEAL_NODES else None

    def _dealing(self) -> bool:
        return self._core.ndealt < DEAL_NODES

    def apply_action(self, action: int) -> None:
        """OpenSpiel's ``apply_action``, for an action id given as an integer (a Python or
        numpy integer, a 0-d integer array) of 0..84; anything else is ``IllegalActionError``
        naming it, before OpenSpiel sees it."""
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            action = action_id(action)
        super().apply_action(action)

    # -------------------------------------------------------------- the API

    def current_player(self) -> int:
        core = self._core
        if core.ndealt < DEAL_NODES:
            return pyspiel.PlayerId.CHANCE
        seat = core.engine.current_player  # -1 once the game is over
        return seat if seat >= 0 else pyspiel.PlayerId.TERMINAL

    def is_terminal(self) -> bool:
        core = self._core
        return core.ndealt == DEAL_NODES and core.engine.current_player < 0

    def _legal_actions(self, player: int) -> list[int]:
        """The engine's legal actions of the seat to act, ascending."""
        return self._core.engine.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The first declarer (0-3, 1/4 each), then the next card (uniform over those not dealt)."""
        core = self._core
        if core.first < 0:
            return [(seat, 1.0 / NUM_PLAYERS) for seat in range(NUM_PLAYERS)]
        d = core.deal
        m = FULL_DECK & ~(d[0] | d[1] | d[2] | d[3])
        b = _BYTE_CARDS  # a byte at a time: a chance step is on the hot path of every sampled game
        left = (
            *b[0][m & 255], *b[1][m >> 8 & 255], *b[2][m >> 16 & 255], *b[3][m >> 24 & 255],
            *b[4][m >> 32 & 255], *b[5][m >> 40 & 255], *b[6][m >> 48],
        )  # fmt: skip
        row = _OUTCOMES[len(left)]
        return [row[c] for c in left]

    def _apply_action(self, action: int) -> None:
        core = self._core
        if core.ndealt < DEAL_NODES:  # a chance step: the rewards of the hand just ended stay
            if core.first < 0:
                self._draw_first_declarer(action)
            else:
                self._deal_card(action)
            return
        result = core.engine.apply_action(action)
        if result is None:
            core.rewards = (0.0,) * NUM_PLAYERS
            return
        core.rewards = tuple(float(x) for x in result.settled)
        core.returns = tuple(r + x for r, x in zip(core.returns, core.rewards))
        if not core.engine.is_terminal:  # the next hand is dealt by chance
            core.deal, core.ndealt = (0, 0, 0, 0), 0

    def _draw_first_declarer(self, seat: int) -> None:
        """The engine state starts now, its first hand dealt by the chance nodes to come."""
        core = self._core
        if seat not in range(NUM_PLAYERS):
            raise ValueError(f"the first chance outcome is a seat 0-3, not {seat}")
        core.first = seat
        core.engine = BarbuState.new_game(
            core.setup.rules, rng=np.random.default_rng(0), first_declarer=seat, episode=core.setup.episode
        )

    def _deal_card(self, card: int) -> None:
        """Card ``card`` to seat ``ndealt % 4``; the last one deals the hand to the engine."""
        core = self._core
        d = list(core.deal)
        bit = 1 << card
        if not 0 <= card < NUM_CARDS or bit & (d[0] | d[1] | d[2] | d[3]):
            raise ValueError(f"card {card} is not in the deck still to deal")
        d[core.ndealt % NUM_PLAYERS] |= bit
        core.deal = tuple(d)
        core.ndealt += 1
        if core.ndealt == DEAL_NODES:
            core.engine.deal_hand([cards_of(h) for h in d])

    def rewards(self) -> list[float]:
        """rewards=hand: the settled scores of the hand that the last decision ended, else
        zeros (until the next decision: the chance steps that deal the next hand leave them).
        rewards=terminal: zeros until the episode ends, then ``returns()``."""
        core = self._core
        if core.setup.terminal:
            return list(core.returns) if self.is_terminal() else [0.0] * NUM_PLAYERS
        return list(core.rewards)

    def returns(self) -> list[float]:
        """The settled scores of the hands played since this state's start (rewards=terminal:
        zeros until the episode ends)."""
        core = self._core
        if core.setup.terminal and not self.is_terminal():
            return [0.0] * NUM_PLAYERS
        return list(core.returns)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            core = self._core
            if core.first < 0:
                return f"first declarer seat {action}"
            if self._dealing():
                return f"deal {card_text(action)} to seat {core.ndealt % NUM_PLAYERS}"
            return f"deal {card_text(action)}"
        return action_text(action)

    def __str__(self) -> str:
        core = self._core
        if core.first < 0:
            return "Drawing the first declarer"
        if self._dealing():
            e = core.engine
            lines = [f"Hand {e.hand_number + 1}: dealing, {core.ndealt} of {NUM_CARDS} cards dealt"]
            lines += [f"P{p} dealt: {hand_text(core.deal[p]) or '-'}" for p in range(NUM_PLAYERS)]
            return "\n".join(lines)
        return str(core.engine)

    # -------------------------------------------------------------- tensors

    def _write_tensor(self, player: int, out: np.ndarray, out64: np.ndarray) -> None:
        """``player``'s observation (``out`` float32 [1, OBS_DIM]) or information state
        ([1, INFO_DIM]), written in place by the kernels; ``out64`` is ``out`` seen as uint64.
        At chance nodes: the module docstring."""
        core = self._core
        e = core.engine
        if e is None:
            out.fill(0.0)
            return
        K.game_observe(*e._games, e._rp, out, out64, player)
        if core.ndealt < DEAL_NODES:
            x = out[0]
            perfect_recall = len(x) == INFO_DIM
            row = np.zeros(NUM_CARDS, dtype=np.float32)
            row[cards_of(core.deal[player])] = 1.0
            a, b, _ = OFFSETS["hand"]
            x[a:b] = row
            if perfect_recall:
                a, b, _ = INFO_OFFSETS["dealt"]
                x[a:b] = row
            a, _, _ = OFFSETS["cards_left"]
            for r in range(NUM_PLAYERS):
                x[a + r] = core.deal[(player + r) % NUM_PLAYERS].bit_count() / CARDS_PER_HAND

    # -------------------------------------------------------------- resampling

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> BarbuSpielState:
        """A copy whose other three hands are drawn uniformly among those consistent with
        ``player_id``'s information (its hand, every public fact, the exclusions play has
        shown); the draw is seeded from one value of ``probability_sampler`` (a callable
        returning a float in [0, 1), as OpenSpiel's samplers are). While a hand is being
        dealt, the cards dealt so far to the other seats are redrawn (uniformly among the
        cards not dealt to the player). The copy's ``history()`` is the original's: its
        chance outcomes are not rewritten, so the copy is for search, not for replay."""
        c = self.clone()
        core = c._core
        if core.first < 0 or c.is_terminal():
            return c
        rng = np.random.default_rng(int(float(probability_sampler()) * 2**53))
        p = int(player_id)
        if core.ndealt < DEAL_NODES:
            d = list(core.deal)
            pool = np.array(cards_of(FULL_DECK & ~d[p]), dtype=np.int64)
            rng.shuffle(pool)
            start = 0
            for r in range(1, NUM_PLAYERS):
                q = (p + r) % NUM_PLAYERS
                n = d[q].bit_count()
                d[q] = sum(1 << int(x) for x in pool[start : start + n])
                start += n
            core.deal = tuple(d)
            return c
        resample_engine(core.engine, p, rng)
        return c


def resample_engine(state: BarbuState, seat: int, rng: np.random.Generator) -> None:
    """Redeal, in place, the hands of the three seats other than ``seat`` uniformly among
    those consistent with ``seat``'s information (``barbu_env.game.worlds.sample_worlds``)."""
    hands, played, excluded = state.hands, state.played, state.excluded
    others = [(seat + r) % NUM_PLAYERS for r in range(1, NUM_PLAYERS)]
    unknown = hands[others[0]] | hands[others[1]] | hands[others[2]]
    world = sample_worlds(unknown, [hands[q].bit_count() for q in others], [excluded[q] for q in others], 1, rng)[
        0
    ].tolist()
    dealt = list(state.dealt)
    for q, h in zip(others, world):
        hands[q] = int(h)
        dealt[q] = int(h) | played[q]
    state.hands = hands
    state.dealt = dealt
    h = state.hand_number
    if h < len(state.deals):
        state.deals[h] = tuple(dealt)


def state_from_engine(game: BarbuGame, barbu_state: BarbuState) -> BarbuSpielState:
    """A state of ``game`` continuing from ``barbu_state`` (copied), its hand already dealt,
    with an empty history and zero returns. The engine state's episode and rules must be
    the game's (build it with the same ``episode``: ``BarbuState.from_position(...,
    episode="hand")`` for ``load_game(rules, episode="hand")``)."""
    s = game.new_initial_state()
    core = s._core
    core.engine = barbu_state.clone()
    core.first = barbu_state.first_declarer
    core.deal = tuple(barbu_state.dealt)
    core.ndealt = DEAL_NODES
    return s


# ---------------------------------------------------------------------- the observer


class BarbuObserver:
    """OpenSpiel's Python observer protocol (``open_spiel/python/observation.py``):
    ``tensor`` (flat float32), ``dict`` (its named views, ``observation.SLICES`` or
    ``INFO_SLICES``), ``set_from(state, player)`` and ``string_from(state, player)``.
    perfect_recall=False: the observation; True: the information state. With
    ``private_info`` NONE the player's cards (``hand``, ``dealt``) are zeros; without
    ``public_info`` every other slice is. All players' private information is not
    offered (the hands are what the game hides)."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType):
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise ValueError("python_barbu offers no observation of every player's cards")
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        self.public = bool(iig_obs_type.public_info)
        offsets = INFO_OFFSETS if self.perfect_recall else OFFSETS
        self._out = np.zeros((1, INFO_DIM if self.perfect_recall else OBS_DIM), dtype=np.float32)
        self._out64 = self._out.view(np.uint64)  # the kernels write card rows as 64-bit words
        self.tensor = self._out[0]
        self.dict = {name: self.tensor[a:b].reshape(shape) for name, (a, b, shape) in offsets.items()}
        self._private = [offsets[n][:2] for n in _PRIVATE_SLICES if n in offsets]
        self._strings: dict[tuple, str] = {}

    def set_from(self, state: BarbuSpielState, player: int) -> None:
        """Write ``player``'s tensor into ``tensor`` in place (the kernels write it; nothing allocated)."""
        state._write_tensor(player, self._out, self._out64)
        x = self.tensor
        if not self.public:
            keep = [x[a:b].copy() for a, b in self._private]
            x[:] = 0
            for (a, b), v in zip(self._private, keep):
                x[a:b] = v
        if not self.private:
            for a, b in self._private:
                x[a:b] = 0

    def string_from(self, state: BarbuSpielState, player: int) -> str:
        """``describe`` of the tensor. Search keys its tree by this string, calling it for
        the same information state again and again, so the texts are remembered by the
        tensor's non-zero values (at most ``STRING_CACHE`` of them, then forgotten at once)."""
        self.set_from(state, player)
        x = self.tensor
        nz = np.flatnonzero(x)
        at_chance = state.is_chance_node()
        key = (at_chance, nz.tobytes(), x[nz].tobytes())
        text = self._strings.get(key)
        if text is None:
            if len(self._strings) >= STRING_CACHE:
                self._strings.clear()
            text = self._strings[key] = describe(x, at_chance=at_chance)
        return text


pyspiel.register_game(_game_type(utility_of(_STANDARD, "game")[0]), BarbuGame)

__all__ = [
    "GAME_NAME",
    "REWARDS",
    "BarbuGame",
    "BarbuObserver",
    "BarbuSpielState",
    "describe",
    "game_params",
    "load_game",
    "resample_engine",
    "rules_of",
    "state_from_engine",
    "utility_of",
]
