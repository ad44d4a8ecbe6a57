"""Observations: what one seat sees, as a flat float32 vector of named slices.

Everything is from the observer's seat: relative seat 0 is the observer, 1 its left
(next to play), 2 opposite, 3 right. A card row is 52 values in card-id order
(``suit * 13 + rank``). Only the observer's own hand and public facts are encoded.
The slices are ``SLICES`` below, in order; the environment's documentation
(``barbu_env/envs/aec.py``) has the table of what each means, and a test keeps the two
in step.

``OBS_DIM`` is the sum of the slices (1132; ``OBS_LAYOUT`` numbers the layout);
``OFFSETS[name]`` is a slice's ``(start, end, shape)`` in the vector (``markdown_table()``
writes them as the table of ``docs/environment.md``). ``decode(obs)`` splits a vector (or
a batch ``[..., 1132]``) back into its named slices, reshaped, by indexing and reshaping
alone: a torch tensor (or any array with numpy's indexing) gives views of itself, inside
the autograd graph, so a feature extractor can decode its input;
``read(obs, seat)`` reads one observation back into whole numbers and card sets by
absolute seat (a ``Reading``), the one reading that the table view
(``barbu_env.view.table.TableView.from_observation``) and the positions built from an
observation (``barbu_env.game.position.Positions.from_observation``) start from. This
module is the layout only:
the vectors are written by the numba kernels (``barbu_env.game._kernels``) from one game's
state, through ``BarbuState.observe(seat)``. ``BarbuState.state_vector()`` is the global,
perfect-information vector for centralized critics: all four hands (absolute seats),
then seat 0's observation less its hand slice (``STATE_DIM`` = 1288).

Bounds: every value lies in 0..1 (card rows, one-hots, fractions; ``owed`` is doubles
owed over ``min_declarer_doubles``, at most 1) but two slices, ``hand_points`` (a hand's
raw points / 10) and ``game_scores`` (game totals / 100). No bound is infinite: no point
switch exceeds ``POINTS_LIMIT`` (10 000), so every score is bounded
(``docs/rules.md#how-large-scores-can-get``). ``OBS_LOW`` / ``OBS_HIGH`` (and
``INFO_LOW`` / ``INFO_HIGH``, ``STATE_LOW`` / ``STATE_HIGH``) hold under every rules
variant, so that an environment's observation space is the same whatever its rules;
``observation_bounds(rules)`` (and ``information_state_bounds``, ``state_bounds``) are
the bounds under given rules.

The information state (``INFO_SLICES``, ``INFO_DIM`` = 4152, ``INFO_LAYOUT``) is the
observation followed by the seat's perfect recall of the hand under way (``dealt``,
``play_order``, ``doubling_turns``, ``domino_passes``: the table of what each means is in
``barbu_env/envs/aec.py``, as for the observation's slices). Once the game is over the
slices keep the last hand's record; a position built from an observation
(``Positions.from_observation``) has no record: its slices hold only what is played after
it. ``decode_information_state(x)`` splits a vector (or a batch) into its named slices, as
``decode`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cards import NUM_CARDS
from .constants import NUM_CONTRACTS, NUM_HANDS, NUM_PLAYERS
from .rules import _CONTRACT_ITEMS, _GAME_BOUND_PER_POINT, POINT_SWITCHES, POINTS_LIMIT, Rules, load_rules

# (name, shape) of every slice, in order; the offsets follow.
SLICES: tuple[tuple[str, tuple[int, ...]], ...] = (
    # --- card rows ---
    ("hand", (NUM_CARDS,)),
    ("trick", (NUM_PLAYERS, NUM_CARDS)),
    ("played", (NUM_PLAYERS, NUM_CARDS)),
    ("taken", (NUM_PLAYERS, NUM_CARDS)),
    ("domino_playable", (NUM_CARDS,)),
    ("excluded", (NUM_PLAYERS, NUM_CARDS)),
    # --- hand-level fields: change with the phase, hand, contract or doubling turn ---
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
    # --- per-decision fields ---
    ("to_act", (NUM_PLAYERS,)),
    ("leader", (NUM_PLAYERS,)),
    ("trick_number", (13,)),
    ("tricks_won", (NUM_PLAYERS,)),
    ("hand_points", (NUM_PLAYERS,)),
    ("domino_place", (NUM_PLAYERS, NUM_PLAYERS)),
    ("cards_left", (NUM_PLAYERS,)),
    ("voids", (NUM_PLAYERS, 4)),
)


#: Doubling turns in a hand at most: four, then up to three redouble-pass turns.
MAX_DOUBLING_TURNS = 7


def _offsets(slices=SLICES) -> dict[str, tuple[int, int, tuple[int, ...]]]:
    out, start = {}, 0
    for name, shape in slices:
        size = int(np.prod(shape))
        out[name] = (start, start + size, shape)
        start += size
    return out


OFFSETS = _offsets()
OBS_DIM = max(end for _, end, _ in OFFSETS.values())
#: Card rows: hand, 4 trick rows, 4 played rows, 4 taken rows, domino_playable, 4 excluded rows.
NUM_CARD_ROWS = 18
#: The version of this layout, saved with trained networks so that a network trained on
#: another layout is refused rather than misread.
OBS_LAYOUT = 2


def _raw_range(values: Mapping[str, Any]) -> tuple[int, int]:
    """The lowest and highest raw score a seat can hold during a hand (``hand_points``
    times 10) when the point switches have ``values`` (switch -> int or tuple of ints):
    0 when the hand starts, then a sum over a set of the contract's items (one seat may take
    them all), or one of the Domino values."""
    low = high = 0
    for items in _CONTRACT_ITEMS:
        worth = [v for name, n in items for v in np.atleast_1d(values[name]).tolist() * n]
        low, high = min(low, sum(v for v in worth if v < 0)), max(high, sum(v for v in worth if v > 0))
    return min(low, *values["domino_scores"]), max(high, *values["domino_scores"])


def _bounds(raw: tuple[int, int], total: int) -> tuple[np.ndarray, np.ndarray]:
    """Observation bounds for raw hand scores in ``raw`` and game totals within ``+-total``."""
    low, high = np.zeros(OBS_DIM, np.float32), np.ones(OBS_DIM, np.float32)
    a, b, _ = OFFSETS["hand_points"]
    low[a:b], high[a:b] = raw[0] / 10, raw[1] / 10
    a, b, _ = OFFSETS["game_scores"]
    low[a:b], high[a:b] = -total / 100, total / 100
    return low, high


def observation_bounds(rules: Rules | str | Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest value of every observation value under ``rules`` (anything
    ``load_rules`` reads; None: the standard game), as float32 ``(low, high)``. Under the
    standard game ``hand_points`` lies in -3.0..6.5 and ``game_scores`` in -54.6..54.6:

    >>> low, high = observation_bounds()
    >>> decode(low)["hand_points"], decode(high)["game_scores"]
    (array([-3., -3., -3., -3.], dtype=float32), array([54.6, 54.6, 54.6, 54.6], dtype=float32))
    """
    rules = load_rules(rules)
    values = {name: getattr(rules, name) for name in POINT_SWITCHES}
    return _bounds(_raw_range(values), rules.score_bound())


def information_state_bounds(rules: Rules | str | Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``observation_bounds(rules)`` for the information state: the observation's, then 0/1."""
    low, high = observation_bounds(rules)
    extra = INFO_DIM - OBS_DIM
    return np.concatenate([low, np.zeros(extra, np.float32)]), np.concatenate([high, np.ones(extra, np.float32)])


def state_bounds(rules: Rules | str | Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``observation_bounds(rules)`` for the global state: four hands, then the observation
    less its hand."""
    low, high = observation_bounds(rules)
    hands = NUM_PLAYERS * NUM_CARDS
    return (
        np.concatenate([np.zeros(hands, np.float32), low[NUM_CARDS:]]),
        np.concatenate([np.ones(hands, np.float32), high[NUM_CARDS:]]),
    )


#: Lower and upper bounds of every observation value under every rules variant (the
#: observation space of every environment, the same whatever its rules): 0 and 1, but for
#: ``hand_points`` (-13 000..13 000: 13 items of at most ``POINTS_LIMIT`` points) and
#: ``game_scores`` (-116 000..116 000: the worst game, 1160 points per point of switch
#: value, ``docs/rules.md#how-large-scores-can-get``). ``observation_bounds(rules)`` has
#: those of given rules.
OBS_LOW, OBS_HIGH = _bounds((-13 * POINTS_LIMIT, 13 * POINTS_LIMIT), _GAME_BOUND_PER_POINT * POINTS_LIMIT)

#: A seat's privileged view (for a critic during training, never for acting): its
#: observation followed by the other three hands, in relative seat order 1, 2, 3.
PRIVILEGED_DIM = OBS_DIM + (NUM_PLAYERS - 1) * NUM_CARDS

#: The global state: four hands, then seat 0's observation without its hand.
STATE_DIM = NUM_PLAYERS * NUM_CARDS + OBS_DIM - NUM_CARDS
STATE_LOW = np.concatenate([np.zeros(NUM_PLAYERS * NUM_CARDS, np.float32), OBS_LOW[NUM_CARDS:]])
STATE_HIGH = np.concatenate([np.ones(NUM_PLAYERS * NUM_CARDS, np.float32), OBS_HIGH[NUM_CARDS:]])


#: The information state: the observation's slices, then the hand's record (module docstring).
INFO_SLICES: tuple[tuple[str, tuple[int, ...]], ...] = SLICES + (
    ("dealt", (NUM_CARDS,)),
    ("play_order", (NUM_CARDS, NUM_CARDS)),
    ("doubling_turns", (MAX_DOUBLING_TURNS, 2 * NUM_PLAYERS)),
    ("domino_passes", (NUM_PLAYERS, NUM_CARDS)),
)
INFO_OFFSETS = _offsets(INFO_SLICES)
INFO_DIM = max(end for _, end, _ in INFO_OFFSETS.values())
#: The version of the information-state layout (saved with networks trained on it).
INFO_LAYOUT = 1
#: Bounds of every information-state value: the observation's, then 0/1.
INFO_LOW = np.concatenate([OBS_LOW, np.zeros(INFO_DIM - OBS_DIM, np.float32)])
INFO_HIGH = np.concatenate([OBS_HIGH, np.ones(INFO_DIM - OBS_DIM, np.float32)])


def decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Split an observation (or a batch ``[..., OBS_DIM]``) into its named slices: views of
    ``obs``, of its own kind (a torch tensor gives tensors, still in the autograd graph).

    >>> decode(np.arange(OBS_DIM))["excluded"][3, :3]  # where the right-hand seat's first three cards are
    array([884, 885, 886])
    """
    return _split(obs, OFFSETS, OBS_DIM, "an observation")


def decode_information_state(x: np.ndarray) -> dict[str, np.ndarray]:
    """Split an information state (or a batch ``[..., INFO_DIM]``) into its named slices, as ``decode`` does."""
    return _split(x, INFO_OFFSETS, INFO_DIM, "an information state")


def _split(x: np.ndarray, offsets: dict, dim: int, what: str) -> dict[str, np.ndarray]:
    if not hasattr(x, "shape"):  # a list: arrays and tensors are sliced as they are
        x = np.asarray(x)
    if x.shape[-1:] != (dim,):
        raise ValueError(f"{what} has {dim} values, not {x.shape[-1] if x.ndim else 'a scalar'}")
    lead = x.shape[:-1]
    return {name: x[..., a:b].reshape(lead + shape) for name, (a, b, shape) in offsets.items()}


def markdown_table() -> str:
    """The observation's slices as a Markdown table: name, offset, length, shape (the table
    of ``docs/environment.md``, written by ``docs/docstring_to_md.py``)."""
    rows = [
        f"| `{name}` | {a} | {b - a} | {' x '.join(map(str, shape))} | `obs[..., {a}:{b}]` |"
        for name, (a, b, shape) in OFFSETS.items()
    ]
    return "\n".join(["| slice | offset | length | shape | indexing |", "|---|---:|---:|---|---|", *rows]) + "\n"


def card_set(row: np.ndarray) -> int:
    """A decoded 52-value card row as a card set (52-bit int)."""
    return sum(1 << int(c) for c in np.flatnonzero(np.asarray(row) > 0.5))


#: Byte weights that turn 52 0/1 values, packed 8 to a byte, into a card set.
_BYTE_SHIFTS = np.arange(7, dtype=np.uint64) * np.uint64(8)


def card_sets(rows: np.ndarray) -> np.ndarray:
    """Card rows ``[..., 52]`` (0/1 values) as card sets, uint64 ``[...]``."""
    rows = np.asarray(rows)
    packed = np.packbits(rows > 0.5, axis=-1, bitorder="little").astype(np.uint64)  # [..., 7]
    return np.bitwise_or.reduce(packed << _BYTE_SHIFTS, axis=-1)


#: The scales of the slices that are not 0/1 (``barbu_env/envs/aec.py``'s table): game scores / 100,
#: tricks / 13, hand points / 10, cards held / 13.
SCORE_SCALE, TRICKS_SCALE, POINTS_SCALE, CARDS_SCALE = 100, 13, 10, 13
#: The fields of a ``Reading`` read from the scaled slices: (field, slice, scale).
_SCALED = (
    ("scores", "game_scores", SCORE_SCALE),
    ("tricks_won", "tricks_won", TRICKS_SCALE),
    ("points", "hand_points", POINTS_SCALE),
    ("cards_left", "cards_left", CARDS_SCALE),
)
#: The one-hot slices, read as the index of their value set (``Reading``).
ONE_HOT = ("phase", "contract", "trump", "domino_rank", "declarer", "hand_number", "to_act", "leader", "trick_number")
#: The one-hot slices that name a relative seat (read as an absolute seat).
_SEAT_SLICES = ("declarer", "to_act", "leader")


@dataclass(frozen=True)
class Reading:
    """One observation read back into whole numbers and card sets (52-bit ints), every seat
    absolute (the observer at ``seat``), every tuple of four in seat order 0-3.

    The one-hot slices (``ONE_HOT``) are the index of the value set, -1 if none (the first
    if several: ``ambiguous`` names those slices); seats read from them are absolute.
    ``named[i]``: the seats (a 4-bit set) seat i named while doubling; ``owed[i][d]`` as in
    the observation (doubles owed / ``min_declarer_doubles``); ``contracts_left`` 7-bit
    sets of contracts, ``voids`` 4-bit sets of suits; ``scores``, ``tricks_won``,
    ``points`` and ``cards_left`` unscaled (game points, tricks, raw points, cards);
    ``out_order`` the seats in the order they went out in Domino."""

    seat: int
    phase: int
    contract: int
    trump: int
    domino_rank: int
    declarer: int
    hand_number: int
    to_act: int
    leader: int
    trick_number: int
    ambiguous: frozenset[str]
    hand: int
    domino_playable: int
    trick: tuple[int, ...]
    played: tuple[int, ...]
    taken: tuple[int, ...]
    excluded: tuple[int, ...]
    named: tuple[int, ...]
    doubling_done: tuple[bool, ...]
    owed: tuple[tuple[float, ...], ...]
    contracts_left: tuple[int, ...]
    scores: tuple[int, ...]
    tricks_won: tuple[int, ...]
    points: tuple[int, ...]
    cards_left: tuple[int, ...]
    voids: tuple[int, ...]
    out_order: tuple[int, ...]


def read(obs: np.ndarray, seat: int = 0) -> Reading:
    """The observation ``obs`` of the observer at ``seat``, read (see ``Reading``): what the
    table view and the positions built from an observation both start from."""
    d = decode(obs)
    rel = [(p - seat) % NUM_PLAYERS for p in range(NUM_PLAYERS)]  # each seat's relative row

    def by_seat(rows: Any) -> tuple:
        return tuple(rows[r] for r in rel)

    def bits(rows: np.ndarray) -> tuple[int, ...]:  # a 0/1 row per relative seat -> a bit set per seat
        return by_seat(((rows > 0.5) @ (1 << np.arange(rows.shape[-1]))).tolist())

    def scaled(values: np.ndarray, scale: int) -> tuple[int, ...]:  # round(value * scale), half to even
        return by_seat(np.round(values.astype(np.float64) * scale).astype(np.int64).tolist())

    index, ambiguous = {}, set()
    for name in ONE_HOT:
        hot = np.flatnonzero(d[name] > 0.5)
        index[name] = int(hot[0]) if len(hot) else -1
        if len(hot) > 1:
            ambiguous.add(name)
    for name in _SEAT_SLICES:
        if index[name] >= 0:
            index[name] = (seat + index[name]) % NUM_PLAYERS
    sets = card_sets(np.asarray(obs)[: NUM_CARD_ROWS * NUM_CARDS].reshape(NUM_CARD_ROWS, NUM_CARDS)).tolist()

    def card_rows(name: str) -> list[int]:  # the card sets of a slice of card rows, in its order
        a, b, _ = OFFSETS[name]
        return sets[a // NUM_CARDS : b // NUM_CARDS]

    place = d["domino_place"]
    out = sorted((int(np.flatnonzero(place[r] > 0.5)[0]), p) for p, r in enumerate(rel) if place[r].max() > 0.5)
    return Reading(
        seat=seat,
        **index,
        ambiguous=frozenset(ambiguous),
        hand=card_rows("hand")[0],
        domino_playable=card_rows("domino_playable")[0],
        **{name: by_seat(card_rows(name)) for name in ("trick", "played", "taken", "excluded")},
        named=tuple((b << seat | b >> (NUM_PLAYERS - seat)) & 0xF for b in bits(d["doubled"])),  # seats made absolute
        doubling_done=by_seat((d["doubling_done"] > 0.5).tolist()),
        owed=tuple(by_seat(row) for row in by_seat(d["owed"].astype(np.float64).tolist())),
        contracts_left=bits(d["contracts_left"]),
        **{field: scaled(d[name], scale) for field, name, scale in _SCALED},
        voids=bits(d["voids"]),
        out_order=tuple(p for _, p in out),
    )
