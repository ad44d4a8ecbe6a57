"""The oracle's observations (see ``tests/oracle/__init__.py``): what one seat sees, as a flat float32 vector.

Everything is from the observer's seat: relative seat 0 is the observer, 1 its left
(next to play), 2 opposite, 3 right. A card row is 52 values in card-id order
(``suit * 13 + rank``). Only the observer's own hand and public facts are encoded.
The slices are ``SLICES`` below, in order; the environment's documentation
(``barbu_env/envs/aec.py``) has the table of what each means, and a test keeps the two
in step.

``OBS_DIM`` is the sum of the slices (1132). ``decode(obs)`` splits a vector (or a batch)
back into its named slices, reshaped; tests use it. ``ObservationEncoder`` builds the
vectors incrementally (see its docstring). ``ObservationEncoder.state_vector`` is the
global, perfect-information vector for centralized critics: all four hands (absolute
seats), then seat 0's observation less its hand slice (``STATE_DIM`` = 1288).
"""

from __future__ import annotations

import numpy as np

from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.constants import NUM_CONTRACTS, NUM_HANDS, NUM_PLAYERS, Phase
from tests.oracle.engine import BarbuState

# (name, shape) of every slice, in order; the offsets follow.
SLICES: tuple[tuple[str, tuple[int, ...]], ...] = (
    # --- card rows: rewritten row by row when their card set changed ---
    ("hand", (NUM_CARDS,)),
    ("trick", (NUM_PLAYERS, NUM_CARDS)),
    ("played", (NUM_PLAYERS, NUM_CARDS)),
    ("taken", (NUM_PLAYERS, NUM_CARDS)),
    ("domino_playable", (NUM_CARDS,)),
    ("excluded", (NUM_PLAYERS, NUM_CARDS)),
    # --- hand-level fields: rewritten when phase, hand, contract or doubling turn change ---
    ("phase", (7,)),
    ("contract", (NUM_CONTRACTS,)),
    ("trump", (4,)),
    ("domino_rank", (13,)),
    ("declarer", (NUM_PLAYERS,)),
    ("doubled", (NUM_PLAYERS, NUM_PLAYERS)),
    ("doubling_done", (NUM_PLAYERS,)),
    ("owed", (NUM_PLAYERS, NUM_PLAYERS)),
    ("contracts_left", (NUM_PLAYERS, NUM_CONTRACTS)),
    ("hand_number", (NUM_HANDS,)),
    ("game_scores", (NUM_PLAYERS,)),
    # --- per-decision fields: rewritten every time ---
    ("to_act", (NUM_PLAYERS,)),
    ("leader", (NUM_PLAYERS,)),
    ("trick_number", (13,)),
    ("tricks_won", (NUM_PLAYERS,)),
    ("hand_points", (NUM_PLAYERS,)),
    ("domino_place", (NUM_PLAYERS, NUM_PLAYERS)),
    ("cards_left", (NUM_PLAYERS,)),
    ("voids", (NUM_PLAYERS, 4)),
)


def _offsets() -> dict[str, tuple[int, int, tuple[int, ...]]]:
    out, start = {}, 0
    for name, shape in SLICES:
        size = int(np.prod(shape))
        out[name] = (start, start + size, shape)
        start += size
    return out


OFFSETS = _offsets()
OBS_DIM = max(end for _, end, _ in OFFSETS.values())
#: Card rows: hand, 4 trick rows, 4 played rows, 4 taken rows, domino_playable, 4 excluded rows.
NUM_CARD_ROWS = 18
_CARD_END = OFFSETS["excluded"][1]
assert _CARD_END == NUM_CARD_ROWS * NUM_CARDS
_HAND_START = _CARD_END  # start of the hand-level block
_STEP_START = OFFSETS["to_act"][0]  # start of the per-decision block
_STEP_LEN = OBS_DIM - _STEP_START


def _rel(name: str, block_start: int) -> int:
    return OFFSETS[name][0] - block_start


# Offsets within the hand-level block.
_PHASE, _CONTRACT, _TRUMP, _RANK, _DECLARER = (
    _rel(n, _HAND_START) for n in ("phase", "contract", "trump", "domino_rank", "declarer")
)
_DOUBLED, _DONE, _OWED, _LEFT = (_rel(n, _HAND_START) for n in ("doubled", "doubling_done", "owed", "contracts_left"))
_HAND_NO, _SCORES = _rel("hand_number", _HAND_START), _rel("game_scores", _HAND_START)
_HAND_LEN = _STEP_START - _HAND_START
# Offsets within the per-decision block.
_TO_ACT, _LEADER, _TRICK_NO, _WON, _POINTS, _PLACE, _CARDS_LEFT, _VOIDS = (
    _rel(n, _STEP_START)
    for n in ("to_act", "leader", "trick_number", "tricks_won", "hand_points", "domino_place", "cards_left", "voids")
)

#: Lower and upper bounds of every observation value (for the observation space).
OBS_LOW = np.zeros(OBS_DIM, dtype=np.float32)
OBS_HIGH = np.ones(OBS_DIM, dtype=np.float32)
for _name in ("hand_points", "game_scores"):
    OBS_LOW[OFFSETS[_name][0] : OFFSETS[_name][1]] = -np.inf
    OBS_HIGH[OFFSETS[_name][0] : OFFSETS[_name][1]] = np.inf
OBS_HIGH[OFFSETS["owed"][0] : OFFSETS["owed"][1]] = 7.0  # owed / min_declarer_doubles <= 7

#: A seat's privileged view (for a critic during training, never for acting): its
#: observation followed by the other three hands, in relative seat order 1, 2, 3.
PRIVILEGED_DIM = OBS_DIM + (NUM_PLAYERS - 1) * NUM_CARDS

#: The global state: four hands, then seat 0's observation without its hand.
STATE_DIM = NUM_PLAYERS * NUM_CARDS + OBS_DIM - NUM_CARDS
STATE_LOW = np.concatenate([np.zeros(NUM_PLAYERS * NUM_CARDS, np.float32), OBS_LOW[NUM_CARDS:]])
STATE_HIGH = np.concatenate([np.ones(NUM_PLAYERS * NUM_CARDS, np.float32), OBS_HIGH[NUM_CARDS:]])


def decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Split an observation (or a batch ``[..., OBS_DIM]``) into its named slices."""
    obs = np.asarray(obs)
    lead = obs.shape[:-1]
    if obs.shape[-1] != OBS_DIM:
        raise ValueError(f"an observation has {OBS_DIM} values, not {obs.shape[-1]}")
    return {name: obs[..., a:b].reshape(lead + shape) for name, (a, b, shape) in OFFSETS.items()}


def card_set(row: np.ndarray) -> int:
    """A decoded 52-value card row as a card set (52-bit int)."""
    return sum(1 << int(c) for c in np.flatnonzero(np.asarray(row) > 0.5))


def _bits_to_rows(masks: list[int]) -> np.ndarray:
    """Card sets as rows of 52 float32 0/1 values, in one numpy call."""
    raw = b"".join(m.to_bytes(7, "little") for m in masks)
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    return bits.reshape(len(masks), 56)[:, :NUM_CARDS]


# Rows of the encoder's absolute card table: hands, trick cards, played, taken (seats 0-3
# each), the Domino playable set, then the excluded cards (seats 0-3).
_ABS_HANDS, _ABS_TRICK, _ABS_PLAYED, _ABS_TAKEN, _ABS_PLAYABLE, _ABS_EXCL = 0, 4, 8, 12, 16, 17
_NUM_ABS_ROWS = 21
#: _GATHER[seat]: the absolute rows that make ``seat``'s card rows, in slice order.
_GATHER = tuple(
    np.array(
        [_ABS_HANDS + seat]
        + [
            base + (seat + r) % NUM_PLAYERS
            for base in (_ABS_TRICK, _ABS_PLAYED, _ABS_TAKEN)
            for r in range(NUM_PLAYERS)
        ]
        + [_ABS_PLAYABLE]
        + [_ABS_EXCL + (seat + r) % NUM_PLAYERS for r in range(NUM_PLAYERS)]
    )
    for seat in range(NUM_PLAYERS)
)


class ObservationEncoder:
    """Observations of one game, refreshed incrementally from its BarbuState.

    The card rows are kept once, by absolute seat, in a table. Within a hand it is
    brought up to date from the actions applied since the last call (a card leaves its
    owner's hand row and enters its played row) and from the trick, taken and playable
    sets that changed; it is rebuilt only when a new hand (or another game) starts. An
    observation gathers its 18 card rows from the table in the observer's seat order.
    The small fields are kept per observer: the hand-level block is rewritten when the
    phase, hand, contract or doubling turn changed, the per-decision block every time."""

    def __init__(self) -> None:
        self._table = np.zeros((_NUM_ABS_ROWS, NUM_CARDS), dtype=np.float32)
        self._flat = self._table.reshape(-1)
        self._small = np.zeros((NUM_PLAYERS, OBS_DIM - _CARD_END), dtype=np.float32)
        self.reset()

    def reset(self) -> None:
        """Forget what was written (the next call rebuilds everything)."""
        self._state: BarbuState | None = None
        self._hand = -1  # hand number the table holds
        self._cursor = 0  # actions of the history already in the table
        self._trick = [-1] * NUM_PLAYERS
        self._taken = [0] * NUM_PLAYERS
        self._playable = 0
        self._excluded = [0] * NUM_PLAYERS
        self._hand_keys: list[tuple | None] = [None] * NUM_PLAYERS

    def observe(self, state: BarbuState, seat: int) -> np.ndarray:
        """The observation of ``seat`` as a new float32 array."""
        self._sync_cards(state)
        out = np.empty(OBS_DIM, dtype=np.float32)
        np.take(self._table, _GATHER[seat], axis=0, out=out[:_CARD_END].reshape(NUM_CARD_ROWS, NUM_CARDS))
        small = self._small[seat]
        order = (seat, (seat + 1) & 3, (seat + 2) & 3, (seat + 3) & 3)  # relative -> absolute
        key = (state.hand_number, state.phase, state.double_pos, state.contract, state.trump, state.start_rank)
        if key != self._hand_keys[seat]:
            small[: _STEP_START - _HAND_START] = self._hand_block(state, seat, order)
            self._hand_keys[seat] = key
        small[_STEP_START - _HAND_START :] = self._step_block(state, seat, order)
        out[_CARD_END:] = small
        return out

    def _sync_cards(self, state: BarbuState) -> None:
        """Bring the absolute card table up to date with ``state``."""
        history = state.history
        n = len(history)
        if state is not self._state or state.hand_number != self._hand or n < self._cursor:
            self._rebuild(state)
            return
        flat = self._flat
        if n != self._cursor:
            dealt = state.dealt
            for a in history[self._cursor : n]:
                if a < NUM_CARDS:  # a card play: it leaves its owner's hand and joins their played row
                    p = 0 if (dealt[0] >> a) & 1 else 1 if (dealt[1] >> a) & 1 else 2 if (dealt[2] >> a) & 1 else 3
                    flat[(_ABS_HANDS + p) * NUM_CARDS + a] = 0.0
                    flat[(_ABS_PLAYED + p) * NUM_CARDS + a] = 1.0
            self._cursor = n
        trick = state.trick
        if trick != self._trick:
            for p in range(NUM_PLAYERS):
                old, new = self._trick[p], trick[p]
                if old != new:
                    if old >= 0:
                        flat[(_ABS_TRICK + p) * NUM_CARDS + old] = 0.0
                    if new >= 0:
                        flat[(_ABS_TRICK + p) * NUM_CARDS + new] = 1.0
            self._trick = trick[:]
        taken = state.taken
        if taken != self._taken:
            for p in range(NUM_PLAYERS):
                gained = taken[p] & ~self._taken[p]  # within a hand, taken rows only grow
                while gained:
                    low = gained & -gained
                    flat[(_ABS_TAKEN + p) * NUM_CARDS + low.bit_length() - 1] = 1.0
                    gained ^= low
            self._taken = taken[:]
        if state.playable != self._playable:
            self._table[_ABS_PLAYABLE] = _bits_to_rows([state.playable])[0]
            self._playable = state.playable
        if state.excluded != self._excluded:
            self._table[_ABS_EXCL : _ABS_EXCL + NUM_PLAYERS] = _bits_to_rows(state.excluded)
            self._excluded = state.excluded[:]

    def _rebuild(self, state: BarbuState) -> None:
        rows = [*state.hands, *[1 << c if c >= 0 else 0 for c in state.trick], *state.played, *state.taken]
        self._table[:] = _bits_to_rows(rows + [state.playable, *state.excluded])
        self._state = state
        self._hand = state.hand_number
        self._cursor = len(state.history)
        self._trick = state.trick[:]
        self._taken = state.taken[:]
        self._playable = state.playable
        self._excluded = state.excluded[:]

    @staticmethod
    def _hand_block(state: BarbuState, seat: int, order: tuple[int, ...]) -> list[float]:
        """phase ... game_scores: fields that change with the phase, hand or doubling turn."""
        rel = ((0 - seat) & 3, (1 - seat) & 3, (2 - seat) & 3, (3 - seat) & 3)  # absolute -> relative
        block = [0.0] * _HAND_LEN
        phase = state.phase
        block[_PHASE + phase] = 1.0
        block[_HAND_NO + min(state.hand_number, NUM_HANDS - 1)] = 1.0
        if phase < Phase.GAME_OVER:
            block[_DECLARER + rel[state.declarer]] = 1.0
            if state.contract >= 0:
                block[_CONTRACT + state.contract] = 1.0
            if state.trump >= 0:
                block[_TRUMP + state.trump] = 1.0
            if state.start_rank >= 0:
                block[_RANK + state.start_rank] = 1.0
            named = state.named
            for i in range(NUM_PLAYERS):
                for j in range(NUM_PLAYERS):
                    if (named[order[i]] >> order[j]) & 1:
                        block[_DOUBLED + 4 * i + j] = 1.0
            done = state.double_order if phase > Phase.DOUBLE else state.double_order[: state.double_pos]
            for p in done:
                block[_DONE + rel[p]] = 1.0
        m = state.rules.min_declarer_doubles
        for i in range(NUM_PLAYERS):
            p = order[i]
            left = state.contracts_left[p]
            for k in range(7):
                if (left >> k) & 1:
                    block[_LEFT + 7 * i + k] = 1.0
            if m:
                for j in range(NUM_PLAYERS):
                    block[_OWED + 4 * i + j] = state.owed[p][order[j]] / m
            block[_SCORES + i] = state.scores[p] / 100.0
        return block

    @staticmethod
    def _step_block(state: BarbuState, seat: int, order: tuple[int, ...]) -> list[float]:
        """to_act ... cards_left: fields that change with every decision."""
        block = [0.0] * _STEP_LEN
        phase = state.phase
        if phase < Phase.GAME_OVER:
            block[_TO_ACT + ((state.current_player - seat) & 3)] = 1.0
        if phase == Phase.TRICKS:
            block[_LEADER + ((state.leader - seat) & 3)] = 1.0
            block[_TRICK_NO + state.trick_number] = 1.0
        tw, pts, hands, voids = state.tricks_won, state.points, state.hands, state.voids
        for i in range(NUM_PLAYERS):
            p = order[i]
            block[_WON + i] = tw[p] / 13.0
            block[_POINTS + i] = pts[p] / 10.0
            block[_CARDS_LEFT + i] = hands[p].bit_count() / 13.0
            v = voids[p]
            if v:
                for suit in range(4):
                    if (v >> suit) & 1:
                        block[_VOIDS + 4 * i + suit] = 1.0
        for k, p in enumerate(state.out_order):
            block[_PLACE + 4 * ((p - seat) & 3) + k] = 1.0
        return block

    def privileged(self, obs: np.ndarray, seat: int) -> np.ndarray:
        """``seat``'s observation ``obs`` (just built by ``observe``) followed by the other
        three players' hands, relative seats 1, 2, 3: ``PRIVILEGED_DIM`` values."""
        rows = self._table[[_ABS_HANDS + ((seat + k) & 3) for k in (1, 2, 3)]]
        return np.concatenate([obs, rows.reshape(-1)])

    def state_vector(self, state: BarbuState) -> np.ndarray:
        """The global state: all hands (absolute seats), then seat 0's observation less its hand."""
        obs0 = self.observe(state, 0)
        return np.concatenate([self._table[_ABS_HANDS : _ABS_HANDS + NUM_PLAYERS].reshape(-1), obs0[NUM_CARDS:]])
