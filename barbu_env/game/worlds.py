"""Exact uniform sampling of the hidden hands, for determinized (Perfect-Information Monte
Carlo) search.

The searching player knows its own hand and everything public. The three other players,
relative seats 1, 2, 3 (index ``k = 0, 1, 2`` of the arguments below), hold the
``unknown`` cards, ``sizes[k]`` each, and seat ``k + 1`` is publicly known not to hold any
card of ``absent[k]``. Public play only ever reveals that a player did *not* hold certain cards
at some moment: a discard shows a void in the led suit, Trumps' ruff and overtrump
obligations show the lack of a trump (or of a higher one), Barbu's king rule shows the
lack of the king of hearts, a heart lead in No Hearts or Barbu the lack of any other
suit, a Domino pass the lack of every card that could have been placed
(docs/rules.md#what-play-reveals). Hands only shrink during a hand, so each of these is
an exclusion on the current hand, and the ``excluded`` rows of the observation
(``barbu_env.game.observation``) carry exactly these sets. The rules reveal nothing else, and
the deal is uniform, so given the public facts every assignment of the unknown cards that
respects the sizes and the exclusions is equally likely; the sampler draws among them
uniformly. (What an opponent's choice among its legal cards suggests depends on its
policy and is not modelled.) Cards of ``absent[k]`` outside ``unknown`` are ignored.

Method. Each unknown card has a *type*: the set of seats allowed to hold it (7 non-empty
subsets of the 3 seats; a card of the empty type makes the position impossible). Two
cards of one type are interchangeable as far as the constraints go, so a world is a
*split* of every type (how many of its cards each allowed seat gets) times a choice of
which cards of the type go where. With the types in a fixed order ``t_0 .. t_{m-1}``, ::

    W[j][c1, c2] = the number of ways to deal the cards of types j .. m-1 into seats
                   with room c1, c2 and c3 = (cards of types j .. m-1) - c1 - c2,
    W[m][0, 0] = 1,
    W[j][c1, c2] = sum over splits x of t_j with x_k <= c_k (0 for a disallowed seat) of
                   multinomial(n_j; x) * W[j + 1][c1 - x1, c2 - x2].

Rooms never exceed 13, so each level is a 14 x 14 table (the third room is implied), and
``W[0][sizes[0], sizes[1]]`` is the number of consistent worlds. A world is drawn type by
type: the split of ``t_j`` with probability ``multinomial(n_j; x) * W[j + 1][rest] /
W[j][rooms]``, then the cards of the type dealt by a uniform sequential draw (each card to
a seat with probability proportional to the room its split leaves there, which makes all
``multinomial(n_j; x)`` placements equally likely). The product of these probabilities
telescopes: a given world has probability ``prod_j multinomial(n_j; x_j) / W[0] *
prod_j 1 / multinomial(n_j; x_j) = 1 / W[0]``, so the draw is exactly uniform, with no
rejection of whole worlds (however tight the constraints) and no Markov chain.

The counts are exact int64: every entry counts deals of at most 39 cards into rooms of at
most 13, so it is at most 39! / 13!^3 ~ 8.5e16 < 2^63 (float64, exact only to 2^53 ~
9.0e15, would round the larger counts). Random integers below a count are drawn from a
splitmix64 stream with bit-mask rejection, which is exactly uniform too; the stream's
seed is one draw from the caller's Generator, so the result is a function of the
Generator's state. The table and the draws are numba kernels (``njit(cache=True)``, as in
``barbu_env.game._kernels``), compiled on first use.

>>> from barbu_env.game.cards import parse_hand
>>> count_worlds(parse_hand("2C 3C 4C"), (1, 1, 1), (parse_hand("2C"), 0, 0))
4
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._bits import SPLITMIX_GAMMA, U0, U1, kernel, splitmix64
from .cards import FULL_DECK, NUM_RANKS, hand_text

#: The other players, relative seats 1, 2, 3.
NUM_OTHERS = 3
#: The most cards a hand holds, hence the largest room of a seat.
MAX_HAND = NUM_RANKS
#: Card types: the non-empty sets of allowed seats (bit k = relative seat k + 1).
NUM_TYPES = (1 << NUM_OTHERS) - 1
_MAX_UNKNOWN = NUM_OTHERS * MAX_HAND  # 39
#: _BINOM[n, k] = n choose k, n <= 39 (at most 39 choose 19 ~ 6.9e10).
_BINOM = np.array([[math.comb(n, k) for k in range(_MAX_UNKNOWN + 1)] for n in range(_MAX_UNKNOWN + 1)], np.int64)

#: Every function here: compiled on first use, cached on disk; they allocate nothing
#: (the caller passes every array), hence no reference counting (``_bits.kernel``).
_kernel = kernel


@_kernel
def _next_random(state):
    """Next 64-bit output of the splitmix64 stream held in ``state[0]`` (Steele et al. 2014)."""
    z = state[0] + SPLITMIX_GAMMA
    state[0] = z
    return splitmix64(z)


@_kernel
def _below(state, n):
    """A uniform int in [0, n), 0 < n < 2**63: the stream's words masked to the bit length
    of n - 1, rejected while not below n (fewer than two words on average). (The batched
    engine's deals draw with Lemire's method, which needs n < 2**32; the counts here reach
    8.5e16. Each keeps its own: another would change every seeded draw.)"""
    un = np.uint64(n)
    mask = un - U1
    mask |= mask >> np.uint64(1)
    mask |= mask >> np.uint64(2)
    mask |= mask >> np.uint64(4)
    mask |= mask >> np.uint64(8)
    mask |= mask >> np.uint64(16)
    mask |= mask >> np.uint64(32)
    z = _next_random(state) & mask
    while z >= un:
        z = _next_random(state) & mask
    return np.int64(z)


@_kernel
def _split_limits(n, allowed, c1, c2):
    """Largest x1 and x2 a type of ``n`` cards allowed to the seats of ``allowed`` can give
    seats 1 and 2 with rooms c1, c2."""
    hi1 = min(n, c1) if allowed & 1 else 0
    hi2 = min(n, c2) if allowed & 2 else 0
    return hi1, hi2


@_kernel
def _fill_table(counts, allowed, m, table):
    """``table[j, c1, c2]`` = W[j][c1, c2] of the module docstring for the m types
    ``counts[:m]`` (cards per type) / ``allowed[:m]`` (3-bit seat sets); ``table`` is
    zeroed [m + 1, 14, 14] int64."""
    table[m, 0, 0] = 1
    remaining = 0
    for j in range(m - 1, -1, -1):
        n = counts[j]
        a = allowed[j]
        remaining += n
        for c1 in range(min(MAX_HAND, remaining) + 1):
            for c2 in range(min(MAX_HAND, remaining - c1) + 1):
                c3 = remaining - c1 - c2
                if c3 > MAX_HAND:
                    continue
                hi1, hi2 = _split_limits(n, a, c1, c2)
                total = 0
                for x1 in range(hi1 + 1):
                    for x2 in range(min(hi2, n - x1) + 1):
                        x3 = n - x1 - x2
                        if x3 > c3 or (x3 > 0 and not a & 4):
                            continue
                        rest = table[j + 1, c1 - x1, c2 - x2]
                        if rest:
                            total += _BINOM[n, x1] * _BINOM[n - x1, x2] * rest
                table[j, c1, c2] = total


@_kernel
def _deal_type(state, cards, n, x1, x2, out, w):
    """Deal the n cards of ``cards`` to seats 1, 2, 3 of world w, x1 and x2 of them to the
    first two: each card in turn to a seat with probability proportional to the cards
    that seat still gets, which makes every placement equally likely."""
    x3 = n - x1 - x2
    if x1 == n:
        out[w, 0] |= cards
        return
    if x2 == n:
        out[w, 1] |= cards
        return
    if x3 == n:
        out[w, 2] |= cards
        return
    left = n
    while cards != U0:
        b = cards & (~cards + U1)
        cards ^= b
        r = _below(state, left)
        if r < x1:
            out[w, 0] |= b
            x1 -= 1
        elif r < x1 + x2:
            out[w, 1] |= b
            x2 -= 1
        else:
            out[w, 2] |= b
        left -= 1


@_kernel
def _sample(masks, counts, allowed, m, sizes, table, state, out):
    """Fill ``out`` [num_worlds, 3] (zeroed) with uniform worlds, given the filled
    ``table``; the draws come from the splitmix64 stream held in ``state[0]``."""
    for w in range(out.shape[0]):
        c1 = sizes[0]
        c2 = sizes[1]
        c3 = sizes[2]
        for j in range(m):
            n = counts[j]
            a = allowed[j]
            r = _below(state, table[j, c1, c2])
            hi1, hi2 = _split_limits(n, a, c1, c2)
            chosen1 = -1
            chosen2 = -1
            for x1 in range(hi1 + 1):
                for x2 in range(min(hi2, n - x1) + 1):
                    x3 = n - x1 - x2
                    if x3 > c3 or (x3 > 0 and not a & 4):
                        continue
                    rest = table[j + 1, c1 - x1, c2 - x2]
                    if rest:
                        weight = _BINOM[n, x1] * _BINOM[n - x1, x2] * rest
                        if r < weight:
                            chosen1 = x1
                            chosen2 = x2
                            break
                        r -= weight
                if chosen1 >= 0:
                    break
            _deal_type(state, masks[j], n, chosen1, chosen2, out, w)
            c1 -= chosen1
            c2 -= chosen2
            c3 -= n - chosen1 - chosen2


def _check(unknown, sizes, absent) -> tuple[int, tuple[int, int, int], tuple[int, int, int]]:
    """The arguments as Python ints (the sizes of the hands of a real position: in 0..13,
    adding up to the unknown cards)."""
    return int(unknown), tuple(int(s) for s in sizes), tuple(int(x) & FULL_DECK for x in absent)


def _types(unknown: int, absent: Sequence[int]) -> list[tuple[int, int]]:
    """(allowed seat set, cards) of each card type present in ``unknown``, the empty type
    (cards no seat may hold) included as allowed set 0."""
    out = []
    for a in range(NUM_TYPES + 1):
        cards = unknown
        for k in range(NUM_OTHERS):
            cards &= FULL_DECK & ~absent[k] if a >> k & 1 else absent[k]
        if cards:
            out.append((a, cards))
    return out


def count_worlds(unknown: int, sizes: Sequence[int], absent: Sequence[int]) -> int:
    """The exact number of ways to deal the ``unknown`` cards to relative seats 1, 2, 3,
    ``sizes[k]`` cards to seat k + 1, none of ``absent[k]`` to it (0 if there is none)."""
    unknown, sizes, absent = _check(unknown, sizes, absent)
    ways = {(0, 0, 0): 1}  # cards given to each seat so far -> number of ways
    for a, cards in _types(unknown, absent):
        n = cards.bit_count()
        step: dict[tuple[int, int, int], int] = {}
        for (g1, g2, g3), w in ways.items():
            for x1 in range(n + 1 if a & 1 else 1):
                for x2 in range(n - x1 + 1 if a & 2 else 1):
                    x3 = n - x1 - x2
                    if x3 and not a & 4:
                        continue
                    key = (g1 + x1, g2 + x2, g3 + x3)
                    if all(g <= s for g, s in zip(key, sizes)):
                        step[key] = step.get(key, 0) + w * math.comb(n, x1) * math.comb(n - x1, x2)
        ways = step
    return ways.get(sizes, 0)


def sample_worlds(
    unknown: int, sizes: Sequence[int], absent: Sequence[int], num_worlds: int, rng: np.random.Generator
) -> np.ndarray:
    """``num_worlds`` independent uniform draws among the consistent worlds: uint64
    [num_worlds, 3], the hands of relative seats 1, 2, 3 (``sizes[k]`` cards of ``unknown``
    each, none of ``absent[k]``, together exactly ``unknown``). ``unknown`` and the sets
    of ``absent`` are 52-bit card sets (int or np.uint64). Deterministic for the state of
    ``rng``, from which it draws one seed. ValueError if no consistent world exists."""
    unknown, sizes, absent = _check(unknown, sizes, absent)
    types = _types(unknown, absent)
    if types and types[0][0] == 0:
        raise ValueError(f"no consistent world: every other seat is excluded from {hand_text(types[0][1])}")
    # The most numerous type last: its split is then forced by the rooms left.
    types.sort(key=lambda t: t[1].bit_count())
    m = len(types)
    masks = np.array([cards for _, cards in types], dtype=np.uint64)
    counts = np.array([cards.bit_count() for _, cards in types], dtype=np.int64)
    allowed = np.array([a for a, _ in types], dtype=np.int64)
    table = np.zeros((m + 1, MAX_HAND + 1, MAX_HAND + 1), dtype=np.int64)
    _fill_table(counts, allowed, m, table)
    if table[0, sizes[0], sizes[1]] == 0:
        raise ValueError(
            f"no consistent world: the unknown cards cannot be dealt {sizes} to seats 1, 2, 3 without giving a "
            f"seat a card it is known not to hold (absent: {[hand_text(x & unknown) for x in absent]})"
        )
    out = np.zeros((num_worlds, NUM_OTHERS), dtype=np.uint64)
    state = np.array([rng.integers(0, 2**63)], dtype=np.uint64)
    _sample(masks, counts, allowed, m, np.array(sizes, dtype=np.int64), table, state, out)
    return out
