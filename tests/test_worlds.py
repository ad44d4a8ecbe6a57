"""The hidden-hand sampler (``barbu_env.game.worlds``): every world it draws is consistent with
the constraints, its frequencies match a brute-force enumeration of the consistent
worlds on small end positions, ``count_worlds`` matches that enumeration, and bad
constraints fail clearly."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from barbu_env.game.cards import FULL_DECK, SUIT_MASK, cards_of, parse_hand
from barbu_env.game.worlds import count_worlds, sample_worlds

SEATS = 3
#: Frequency tests reject uniformity below this p-value.
P_THRESHOLD = 1e-3
FREQUENCY_SAMPLES = 20_000


def brute_force_worlds(unknown: int, sizes, absent) -> list[tuple[int, int, int]]:
    """Every consistent world, by trying every seat for every unknown card."""
    cards = cards_of(unknown)
    worlds = []
    for seats in itertools.product(range(SEATS), repeat=len(cards)):
        hands = [0, 0, 0]
        for c, k in zip(cards, seats):
            hands[k] |= 1 << c
        if all(h.bit_count() == s and not h & a for h, s, a in zip(hands, sizes, absent)):
            worlds.append(tuple(hands))
    return worlds


def assert_consistent(worlds: np.ndarray, unknown: int, sizes, absent) -> None:
    for row in worlds:
        h = [int(x) for x in row]
        assert h[0] & h[1] == h[0] & h[2] == h[1] & h[2] == 0, "hands overlap"
        assert h[0] | h[1] | h[2] == unknown, "hands are not the unknown cards"
        assert [x.bit_count() for x in h] == list(sizes)
        assert all(not x & a for x, a in zip(h, absent)), "a seat holds a card it is known not to hold"


def random_position(rng: np.random.Generator, max_unknown: int = 39):
    """A random hidden position that has at least one consistent world: a true deal of
    the other seats' hands, and exclusions drawn among the cards each seat does not hold
    (some outside the unknown cards), sometimes whole suits (voids)."""
    deck = rng.permutation(52)
    sizes = [int(rng.integers(0, 14)) for _ in range(SEATS)]
    while sum(sizes) > max_unknown:
        sizes[int(rng.integers(SEATS))] //= 2
    hands, start = [], 0
    for s in sizes:
        hands.append(sum(1 << int(c) for c in deck[start : start + s]))
        start += s
    unknown = hands[0] | hands[1] | hands[2]
    absent = []
    for h in hands:
        not_held = FULL_DECK & ~h
        voids = sum(SUIT_MASK[s] for s in range(4) if not h & SUIT_MASK[s] and rng.random() < 0.7)
        some = sum(1 << c for c in cards_of(not_held) if rng.random() < 0.2)
        absent.append(voids | some)
    return unknown, sizes, absent


def chi_square_p_value(observed: Counter, worlds: list, samples: int) -> float:
    """p-value of Pearson's chi-square test of ``observed`` against uniform over ``worlds``."""
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = samples / len(worlds)
    stat = sum((observed.get(w, 0) - expected) ** 2 / expected for w in worlds)
    return float(scipy_stats.chi2.sf(stat, len(worlds) - 1))


def test_every_sampled_world_is_consistent_on_random_positions():
    rng = np.random.default_rng(1)
    for _ in range(300):
        unknown, sizes, absent = random_position(rng)
        worlds = sample_worlds(unknown, sizes, absent, 8, rng)
        assert worlds.shape == (8, SEATS) and worlds.dtype == np.uint64
        assert_consistent(worlds, unknown, sizes, absent)


# Small end positions, each with a mix of exclusions: (unknown, sizes, absent).
END_POSITIONS = [
    # 9 cards, 3 each; seat 1 void in hearts, seat 3 lacks the ace of clubs.
    (parse_hand("2C 5C AC 3D 9D QD 4H 7H KH"), (3, 3, 3), (SUIT_MASK[2], 0, parse_hand("AC"))),
    # 7 cards 3/2/2; seat 2 void in clubs, seat 1 and 3 lack the king of hearts (only seat 2 may hold it).
    (parse_hand("2C 3C 4C 5D 6D KH 8S"), (3, 2, 2), (parse_hand("KH"), SUIT_MASK[0], parse_hand("KH 5D"))),
    # 6 cards 2/2/2; overlapping voids: seat 1 no spades, seat 2 no diamonds, seat 3 no clubs.
    (parse_hand("7C 9C 2D JD 4S 6S"), (2, 2, 2), (SUIT_MASK[3], SUIT_MASK[1], SUIT_MASK[0])),
    # 5 cards 1/2/2; Domino-style passes exclude a run of ranks from seat 3.
    (parse_hand("8H 9H TH 2S 3S"), (1, 2, 2), (parse_hand("2S"), 0, parse_hand("8H 2S"))),
]


@pytest.mark.parametrize("position", END_POSITIONS, ids=lambda p: f"{p[0].bit_count()}_cards_{p[1]}")
def test_world_frequencies_match_uniform_over_all_consistent_worlds(position):
    unknown, sizes, absent = position
    worlds = brute_force_worlds(unknown, sizes, absent)
    assert 3 <= len(worlds) <= FREQUENCY_SAMPLES // 20  # enough expected draws per world
    drawn = sample_worlds(unknown, sizes, absent, FREQUENCY_SAMPLES, np.random.default_rng(7))
    observed = Counter(tuple(int(x) for x in row) for row in drawn)
    assert set(observed) <= set(worlds)
    assert chi_square_p_value(observed, worlds, FREQUENCY_SAMPLES) > P_THRESHOLD


def test_frequency_check_rejects_a_greedy_sampler():
    """The frequency test has power: dealing each card to a random allowed seat with room
    (a common, non-uniform shortcut) fails it on the first end position."""
    unknown, sizes, absent = END_POSITIONS[0]
    worlds = brute_force_worlds(unknown, sizes, absent)
    rng = np.random.default_rng(7)
    observed: Counter = Counter()
    for _ in range(FREQUENCY_SAMPLES):
        while True:  # restart the deal when it paints itself into a corner
            hands, room = [0, 0, 0], list(sizes)
            for c in cards_of(unknown):
                options = [k for k in range(SEATS) if room[k] and not absent[k] >> c & 1]
                if not options:
                    break
                k = options[int(rng.integers(len(options)))]
                hands[k] |= 1 << c
                room[k] -= 1
            else:
                break
        observed[tuple(hands)] += 1
    assert chi_square_p_value(observed, worlds, FREQUENCY_SAMPLES) < P_THRESHOLD


def test_count_worlds_matches_brute_force_enumeration():
    rng = np.random.default_rng(2)
    seen_zero = seen_many = False
    for _ in range(150):
        n = int(rng.integers(0, 9))
        cards = rng.choice(52, size=n, replace=False)
        unknown = sum(1 << int(c) for c in cards)
        cut = np.sort(rng.integers(0, n + 1, size=2))
        sizes = (int(cut[0]), int(cut[1] - cut[0]), int(n - cut[1]))
        absent = [sum(1 << int(c) for c in cards if rng.random() < 0.3) | int(rng.integers(0, 2**20)) for _ in "123"]
        expected = len(brute_force_worlds(unknown, sizes, absent))
        assert count_worlds(unknown, sizes, absent) == expected
        seen_zero |= expected == 0
        seen_many |= expected > 20
    assert seen_zero and seen_many  # the cases cover impossible and roomy positions


def test_count_worlds_of_a_full_unconstrained_position_is_the_multinomial():
    assert count_worlds((1 << 39) - 1, (13, 13, 13), (0, 0, 0)) == 84478098072866400  # 39! / 13!^3


def test_same_generator_state_gives_the_same_worlds_and_another_differs():
    unknown, sizes, absent = random_position(np.random.default_rng(3))
    a = sample_worlds(unknown, sizes, absent, 16, np.random.default_rng(11))
    b = sample_worlds(unknown, sizes, absent, 16, np.random.default_rng(11))
    c = sample_worlds(unknown, sizes, absent, 16, np.random.default_rng(12))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_big_position_with_voids_is_consistent_and_accepts_numpy_sets():
    rng = np.random.default_rng(4)
    hands = rng.permutation(39).reshape(3, 13) + 13  # the 39 cards other than the clubs
    unknown = sum(1 << int(c) for c in hands.ravel())
    # seat 1 void in diamonds, seat 2 void in spades, seat 3 lacks the hearts the true deal gave others.
    absent = [SUIT_MASK[1] | SUIT_MASK[0], SUIT_MASK[3], SUIT_MASK[2] & ~sum(1 << int(c) for c in hands[2])]
    true = [sum(1 << int(c) for c in h) for h in hands]
    absent = [a & ~t for a, t in zip(absent, true)]  # keep the true deal consistent
    sizes = (13, 13, 13)
    assert count_worlds(unknown, sizes, absent) >= 1
    worlds = sample_worlds(np.uint64(unknown), np.array(sizes), np.array(absent, np.uint64), 64, rng)
    assert_consistent(worlds, unknown, sizes, absent)
    assert len({tuple(r) for r in worlds.tolist()}) > 1


def test_a_card_outside_unknown_in_absent_is_ignored():
    unknown = parse_hand("2C 3C 4C")
    absent = (parse_hand("AS KS"), FULL_DECK & ~unknown, 0)
    assert count_worlds(unknown, (1, 1, 1), absent) == 6
    worlds = sample_worlds(unknown, (1, 1, 1), absent, 10, np.random.default_rng(0))
    assert_consistent(worlds, unknown, (1, 1, 1), absent)


def test_no_unknown_cards_gives_empty_hands():
    worlds = sample_worlds(0, (0, 0, 0), (0, 0, 0), 4, np.random.default_rng(0))
    assert worlds.shape == (4, SEATS) and not worlds.any()
    assert count_worlds(0, (0, 0, 0), (0, 0, 0)) == 1


@pytest.mark.parametrize(
    ("unknown", "sizes", "absent", "message"),
    [
        (parse_hand("2C 3C 4C"), (1, 1, 1), (parse_hand("2C"),) * 3, "every other seat is excluded from 2C"),
        # Seat 1 needs two cards but may hold only 3C.
        (parse_hand("2C 3C 4C"), (2, 1, 0), (parse_hand("2C 4C"), 0, 0), "cannot be dealt (2, 1, 0)"),
    ],
)
def test_impossible_or_malformed_constraints_raise_a_clear_error(unknown, sizes, absent, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample_worlds(unknown, sizes, absent, 4, np.random.default_rng(0))
