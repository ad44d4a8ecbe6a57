"""Positions: everything a game needs to continue exactly, ready to load into slots of the
batched engine (``VectorBarbu.load``).

A :class:`Positions` holds N positions as the kernels hold games: one row of int fields
and one row of card sets per position (``barbu_env.game._kernels``' ``F_*`` and ``K_*``),
plus the deals of the hands still to come where they are known. Three ways to make them:

* ``Positions.from_state(state)``: a ``BarbuState`` as it stands, exactly (its future
  deals too): a slot loaded with it plays on as the state would.
* ``Positions.from_observation(obs, rules)``: what one seat's observation shows, the
  other three hands left empty (``unknown_cards`` and ``hand_sizes`` say what they hold
  between them); then ``with_hidden(hands)`` fills them in, one position per set of
  hidden hands. This is how a search agent, which sees only its observation, sets up
  the worlds it samples (``barbu_env.game.worlds``). The observer sits at ``seat`` (0 unless
  given): the observation is relative to its seat, and everything else follows from it.
  What the observation cannot tell is what the game does not need to continue: how
  many decisions the game has taken so far (0 in the position), the record of the
  previous hand, and the order of the hand's play and doubling turns that the
  information state recalls (``observation.INFO_SLICES``: empty in the position); of two
  seats that named each other, which one redoubled (the later in the four doubling turns,
  exact unless a redouble pass was played; only the hand's record of doubles shows it).
  The rest (the doubling order, the trick's winner so far ...) the kernels derive by the
  rules of play (``_kernels.resume_position``).
  Later hands are dealt from the slot's random stream, or from ``with_future_deals``.

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> from barbu_env.game.vector import VectorBarbu
>>> s = BarbuState.new_game(rng=np.random.default_rng(0))
>>> for a in (52, 76, 76, 76, 76):  # No Tricks, nobody doubles
...     s.apply_action(a)
>>> p = Positions.from_observation(s.observe(s.current_player), s.rules, seat=s.current_player)
>>> p = p.with_hidden([[s.hands[(s.current_player + r) % 4] for r in (1, 2, 3)]])
>>> v = VectorBarbu(1)
>>> obs, masks, seat = v.load(p)
>>> bool((obs[0] == s.observe(s.current_player)).all()), int(seat[0]) == s.current_player
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import _kernels as K
from .cards import NUM_CARDS
from .constants import NUM_HANDS, NUM_PLAYERS, Phase
from .observation import OBS_DIM, decode, read
from .rules import Rules, load_rules

if TYPE_CHECKING:
    from .engine import BarbuState

_ALL = (1 << NUM_CARDS) - 1


@dataclass(frozen=True)
class Positions:
    """N game positions as the kernels' state rows (see the module docstring).

    ``ints`` int64 [N, F], ``cards`` uint64 [N, K], ``preset`` uint64 [N, 28, 4]: deals
    of hands 0 .. ``ints[:, F_PRESET] - 1`` (only those after the current hand matter);
    ``observer`` int64 [N]: the seat whose view the position was built from (the seat to
    act for ``from_state``); ``sizes`` int64 [N, 4]: cards each seat holds."""

    ints: np.ndarray
    cards: np.ndarray
    preset: np.ndarray
    observer: np.ndarray
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.ints)

    def __getitem__(self, index) -> Positions:
        index = np.arange(len(self))[index]
        index = np.atleast_1d(index)
        return Positions(
            self.ints[index], self.cards[index], self.preset[index], self.observer[index], self.sizes[index]
        )

    @property
    def unknown_cards(self) -> np.ndarray:
        """Per position, the cards nobody has played yet and the observer does not hold
        (what the three other hands hold between them), uint64 [N]; meaningful for
        positions from an observation."""
        c = self.cards
        seen = c[np.arange(len(self)), K.K_HANDS + self.observer]
        for p in range(NUM_PLAYERS):
            seen |= c[:, K.K_PLAYED + p]
        return ~seen & np.uint64(_ALL)

    @property
    def excluded(self) -> np.ndarray:
        """Per seat, the cards the rules have shown it does not hold, uint64 [N, 4]."""
        return self.cards[:, K.K_EXCL : K.K_EXCL + NUM_PLAYERS].copy()

    @classmethod
    def concatenate(cls, parts: Sequence[Positions]) -> Positions:
        """The positions of ``parts``, in order, as one."""
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_state(cls, state: BarbuState) -> Positions:
        """``state`` as it stands, exactly, with the deals of its later hands (a game not over)."""
        sizes = np.array([[int(h).bit_count() for h in state.hands]], dtype=np.int64)
        observer = np.array([state.current_player], dtype=np.int64)
        return cls(state._ints.copy(), state._cards.copy(), state._preset.copy(), observer, sizes)

    @classmethod
    def from_observation(cls, obs: np.ndarray, rules: Rules | str | dict | None = None, seat: int = 0) -> Positions:
        """The position ``obs`` shows to its observer, seated at ``seat``: one position
        whose other three hands are empty (fill them with ``with_hidden``). ``rules`` are
        the rules in force (the observation does not carry them)."""
        obs = np.asarray(obs, dtype=np.float32)
        if obs.shape != (OBS_DIM,):
            raise ValueError(f"an observation is float[{OBS_DIM}], not shape {obs.shape}")
        rules = load_rules(rules)
        r = read(obs, seat)

        def one_hot(name: str, optional: bool = False) -> int:  # a one-hot slice's index, or an error naming it
            value = getattr(r, name)
            if name in r.ambiguous or (value < 0 and not optional):
                raise ValueError(f"the observation's {name} slice is not one-hot: {decode(obs)[name].tolist()}")
            return value

        phase = one_hot("phase")
        g = np.zeros(K.NUM_INT_FIELDS, dtype=np.int64)
        c = np.zeros(K.NUM_CARD_FIELDS, dtype=np.uint64)
        for p in range(NUM_PLAYERS):
            c[K.K_PLAYED + p] = r.played[p]
            c[K.K_TAKEN + p] = r.taken[p]
            c[K.K_EXCL + p] = r.excluded[p]
        c[K.K_HANDS + seat] = r.hand
        c[K.K_PLAYABLE] = r.domino_playable
        for p in range(NUM_PLAYERS):
            c[K.K_DEALT + p] = c[K.K_HANDS + p] | c[K.K_PLAYED + p]
        # The hand: its number, declarer, contract, trump or starting rank.
        hand = one_hot("hand_number")
        declarer = one_hot("declarer")
        g[K.F_PHASE] = phase
        g[K.F_HAND] = hand
        g[K.F_DECLARER] = declarer
        rounds = hand if rules.rotation == "every_hand" else hand // 7
        g[K.F_FIRST] = (declarer - rounds) % NUM_PLAYERS
        g[K.F_CONTRACT] = one_hot("contract", optional=True)
        g[K.F_TRUMP] = one_hot("trump", optional=True)
        g[K.F_RANK] = one_hot("domino_rank", optional=True)
        g[K.F_PRESET] = hand + 1  # later hands: from the slot's stream unless with_future_deals
        g[K.F_DIRTY] = 0xF
        g[K.F_CUR] = one_hot("to_act")
        m = rules.min_declarer_doubles
        sizes = np.array([r.cards_left], dtype=np.int64)
        for p in range(NUM_PLAYERS):
            g[K.F_LEFT + p] = r.contracts_left[p]
            g[K.F_SCORES + p] = r.scores[p]
            g[K.F_WON + p] = r.tricks_won[p]
            g[K.F_POINTS + p] = r.points[p]
            g[K.F_VOIDS + p] = r.voids[p]
            g[K.F_NAMED + p] = r.named[p]
            for q in range(NUM_PLAYERS):
                g[K.F_OWED + 4 * p + q] = round(r.owed[p][q] * m) if m else 0
        # The current trick: its number, leader and cards by seat.
        g[K.F_TRICK : K.F_TRICK + NUM_PLAYERS] = -1
        g[K.F_LEADER] = declarer
        if phase == Phase.TRICKS:
            g[K.F_TRICK_NO] = one_hot("trick_number")
            g[K.F_LEADER] = one_hot("leader")
            for p in range(NUM_PLAYERS):
                if r.trick[p]:
                    g[K.F_TRICK + p] = r.trick[p].bit_length() - 1
        # The rest (doubling order and position, the trick's winner so far ...) as the kernels' rules make it.
        done = sum(1 << p for p in range(NUM_PLAYERS) if r.doubling_done[p])
        K.resume_position(g[None], c[None], done)
        for k, p in enumerate(r.out_order):  # Domino finishing order
            g[K.F_OUT + k] = p
        g[K.F_NOUT] = len(r.out_order)
        preset = np.zeros((1, NUM_HANDS, NUM_PLAYERS), dtype=np.uint64)
        return cls(g[None], c[None], preset, np.array([seat], dtype=np.int64), sizes)

    # ------------------------------------------------------------------ variations

    def with_hidden(self, hands: Sequence | np.ndarray, check: bool = True) -> Positions:
        """One position per row of ``hands`` (N x 3 card sets, or N x 3 lists of card ids):
        the hands of the three seats other than the observer's, in seat order after it
        (its left, opposite, right). From a position with one row, or one row per row of
        ``hands``. ``check`` verifies that the hands hold exactly the unknown cards, in
        the sizes the observation shows, and none that a seat is known not to hold."""
        if not (isinstance(hands, np.ndarray) and np.issubdtype(hands.dtype, np.integer) and hands.ndim == 2):
            hands = [[h if isinstance(h, (int, np.integer)) else sum(1 << int(x) for x in h) for h in r] for r in hands]
        hands = np.array(hands, dtype=np.uint64).reshape(-1, NUM_PLAYERS - 1)
        n = len(hands)
        if len(self) not in (1, n):
            raise ValueError(f"{len(self)} positions cannot take {n} sets of hidden hands")
        base = self if len(self) == n else self[np.zeros(n, dtype=np.int64)]
        cards, rows = base.cards.copy(), np.arange(n)
        for r in range(1, NUM_PLAYERS):
            p = (base.observer + r) % NUM_PLAYERS
            cards[rows, K.K_HANDS + p] = hands[:, r - 1]
            cards[rows, K.K_DEALT + p] = hands[:, r - 1] | cards[rows, K.K_PLAYED + p]
        out = Positions(base.ints.copy(), cards, base.preset.copy(), base.observer.copy(), base.sizes.copy())
        if check:
            out._check_hidden()
        return out

    def with_future_deals(self, deals: np.ndarray) -> Positions:
        """The positions with the deals of the hands after the current one, card sets
        uint64 [N, k, 4] (hands h+1 ... h+k; later hands from the slot's stream)."""
        deals = np.asarray(deals, dtype=np.uint64)
        ints, preset = self.ints.copy(), self.preset.copy()
        for i in range(len(self)):
            h = int(ints[i, K.F_HAND])
            k = min(deals.shape[1], NUM_HANDS - h - 1)
            preset[i, h + 1 : h + 1 + k] = deals[i, :k]
            ints[i, K.F_PRESET] = h + 1 + k
        return Positions(ints, self.cards.copy(), preset, self.observer.copy(), self.sizes.copy())

    def _check_hidden(self) -> None:
        c = self.cards
        for i in range(len(self)):
            o = int(self.observer[i])
            others = [int(c[i, K.K_HANDS + (o + r) % NUM_PLAYERS]) for r in range(1, NUM_PLAYERS)]
            union = others[0] | others[1] | others[2]
            if sum(h.bit_count() for h in others) != union.bit_count() or union != int(self.unknown_cards[i]):
                raise ValueError(f"position {i}: the hidden hands must hold exactly the unknown cards, once each")
            for r, h in enumerate(others, start=1):
                p = (o + r) % NUM_PLAYERS
                if h.bit_count() != self.sizes[i, p]:
                    raise ValueError(f"position {i}: seat {p} holds {self.sizes[i, p]} cards, not {h.bit_count()}")
                if h & int(c[i, K.K_EXCL + p]):
                    raise ValueError(f"position {i}: seat {p} is known not to hold some of the cards given to it")


_FIELDS = ("ints", "cards", "preset", "observer", "sizes")
