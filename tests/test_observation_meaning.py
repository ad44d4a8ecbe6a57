"""What the observation's bookkeeping slices mean, on positions set up through the public
API (``barbu_env.env()``, ``reset(options={"deals", "first_declarer"})``, ``step``,
``barbu_env.game.observation.decode``), with the values written here from the rules:
``doubling_done``, ``owed``, ``hand_points`` and ``domino_place``. Every slice is seen
from the observer's seat (relative seat 0 is the observer, 1 its left, 2 opposite, 3 right)."""

from __future__ import annotations

import numpy as np

import barbu_env
from barbu_env.game.observation import decode

#: Each seat holds one whole suit: seat 0 clubs, 1 diamonds, 2 hearts, 3 spades.
ONE_SUIT_EACH = [[f"{r}{s}" for r in "23456789TJQKA"] for s in "CDHS"]
DECLARE_NO_TRICKS, DECLARE_DOMINO = 52, 58
NOBODY = 76  # a doubling turn naming nobody; 76 + bits (1 left, 2 opposite, 4 right) names seats
DOMINO_RANK_7 = 63 + 5


def new_env(first_declarer: int = 0):
    env = barbu_env.env()
    env.reset(options={"deals": [ONE_SUIT_EACH], "first_declarer": first_declarer})
    return env


def seen_by(env, seat: int) -> dict[str, np.ndarray]:
    return decode(env.observe(f"player_{seat}")["observation"])


def to_act(env) -> int:
    return int(env.agent_selection.split("_")[1])


def test_doubling_done_and_owed_follow_the_doubling_turns():
    env = new_env(first_declarer=0)
    # At the start every other seat owes each declarer min_declarer_doubles = 2 doubles: 2 / 2 = 1.
    fresh = seen_by(env, 0)
    expected_owed = np.ones((4, 4)) - np.eye(4)
    np.testing.assert_array_equal(fresh["owed"], expected_owed)
    np.testing.assert_array_equal(fresh["doubling_done"], [0, 0, 0, 0])
    env.step(DECLARE_NO_TRICKS)
    # The doubling turns go round from the declarer's left: seats 1, 2, 3, then the declarer.
    # After each, seat 0 and seat 2 see who has had theirs (relative seats).
    done_by_0 = [[0, 1, 0, 0], [0, 1, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1]]
    done_by_2 = [[0, 0, 0, 1], [1, 0, 0, 1], [1, 1, 0, 1], [1, 1, 1, 1]]
    for turn, seat in enumerate([1, 2, 3, 0]):
        assert to_act(env) == seat
        env.step(NOBODY + 2 if seat == 2 else NOBODY)  # seat 2 doubles seat 0, opposite it
        np.testing.assert_array_equal(seen_by(env, 0)["doubling_done"], done_by_0[turn])
        np.testing.assert_array_equal(seen_by(env, 2)["doubling_done"], done_by_2[turn])
    # Seat 2 owes declarer 0 one double less: 1 / 2. From seat 0, seat 2 is relative 2 and the
    # declarer relative 0; from seat 1, seat 2 is relative 1 and seat 0 relative 3.
    owed_0 = expected_owed.copy()
    owed_0[2, 0] = 0.5
    np.testing.assert_array_equal(seen_by(env, 0)["owed"], owed_0)
    owed_1 = np.ones((4, 4)) - np.eye(4)
    owed_1[1, 3] = 0.5
    np.testing.assert_array_equal(seen_by(env, 1)["owed"], owed_1)


def test_hand_points_are_the_raw_points_of_the_hand_so_far_over_ten():
    env = new_env(first_declarer=0)
    env.step(DECLARE_NO_TRICKS)
    while seen_by(env, 0)["phase"].argmax() == 3:  # the doubling turns: nobody doubles
        env.step(NOBODY)
    leader = to_act(env)
    for _ in range(4):  # one trick: the leader's suit is nobody else's, so the leader takes it
        seat = to_act(env)
        env.step(int(np.flatnonzero(env.observe(f"player_{seat}")["action_mask"])[0]))
    # No Tricks: -2 a trick, so the leader has -2 raw points: -0.2, at relative seat 0 for
    # itself and relative seat 1 for the seat to its right.
    expected = np.zeros(4)
    expected[0] = -0.2
    np.testing.assert_allclose(seen_by(env, leader)["hand_points"], expected, atol=1e-6)
    right = (leader + 3) % 4
    expected = np.zeros(4)
    expected[1] = -0.2
    np.testing.assert_allclose(seen_by(env, right)["hand_points"], expected, atol=1e-6)


def test_domino_place_records_who_went_out_in_which_place():
    env = new_env(first_declarer=0)
    env.step(DECLARE_DOMINO)
    env.step(DOMINO_RANK_7)
    while seen_by(env, 0)["phase"].argmax() == 3:
        env.step(NOBODY)
    first = to_act(env)
    plays = 0
    # Each seat holds a whole suit, so each always has a card to place: one card a turn, and
    # the first to play goes out first, on its 13th card; the next seat after it.
    while plays < 4 * 12 + 2:
        seat = to_act(env)
        env.step(int(np.flatnonzero(env.observe(f"player_{seat}")["action_mask"])[0]))
        plays += 1
    second = (first + 1) % 4
    observer = (first + 2) % 4  # still in: first is its relative 2, second its relative 3
    expected = np.zeros((4, 4))
    expected[2, 0] = 1  # relative seat 2 went out first
    expected[3, 1] = 1  # relative seat 3 went out second
    np.testing.assert_array_equal(seen_by(env, observer)["domino_place"], expected)
    expected = np.zeros((4, 4))
    expected[0, 0] = 1  # the first out sees itself first
    expected[1, 1] = 1
    np.testing.assert_array_equal(seen_by(env, first)["domino_place"], expected)
    assert second != observer
