"""The observation bounds (``barbu_env.game.observation``): finite everywhere, and every value
that play produces lies within them, under every preset and under rules with large point
values; the environments' spaces carry them, and Gymnasium's checker has nothing to say."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import barbu_env
from barbu_env.game.observation import (
    INFO_HIGH,
    INFO_LOW,
    OBS_HIGH,
    OBS_LOW,
    STATE_HIGH,
    STATE_LOW,
    decode,
    information_state_bounds,
    observation_bounds,
    state_bounds,
)
from barbu_env.game.rules import POINTS_LIMIT, load_rules, preset_names

#: Rules with large point values of both signs (Domino's spread as wide as allowed): the
#: score slices' bounds scale with them.
LARGE = {
    "no_tricks_points": -POINTS_LIMIT,
    "no_hearts_points": 3,
    "trumps_points": POINTS_LIMIT,
    "no_last_two_points": [POINTS_LIMIT, -POINTS_LIMIT],
    "domino_scores": [POINTS_LIMIT, 0, 0, -POINTS_LIMIT],
    "min_declarer_doubles": 1,
}
RULES = [*preset_names(), LARGE]


def test_no_bound_is_infinite():
    for low, high in [(OBS_LOW, OBS_HIGH), (INFO_LOW, INFO_HIGH), (STATE_LOW, STATE_HIGH)]:
        assert np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()
    for rules in RULES:
        for bounds in (observation_bounds, information_state_bounds, state_bounds):
            low, high = bounds(rules)
            assert np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()


def test_the_bounds_of_the_standard_game():
    low, high = decode(observation_bounds()[0]), decode(observation_bounds()[1])
    # raw points in a hand: -30 (every heart, or both last tricks) to +65 (13 tricks of Trumps), / 10
    assert (low["hand_points"] == -3.0).all() and (high["hand_points"] == 6.5).all()
    assert (high["game_scores"] == np.float32(load_rules(None).score_bound() / 100)).all()
    assert (low["game_scores"] == -high["game_scores"]).all()
    everything_else = [name for name in low if name not in ("hand_points", "game_scores")]
    assert all((low[n] == 0).all() and (high[n] == 1).all() for n in everything_else)


def test_the_spaces_hold_under_every_rules_variant():
    # one observation space for every rules variant: a policy trained under one loads under another
    for rules in RULES:
        for ours, theirs in zip(observation_bounds(rules), (OBS_LOW, OBS_HIGH)):
            assert (np.abs(ours) <= np.abs(theirs)).all(), rules
    assert np.array_equal(INFO_LOW[: OBS_LOW.size], OBS_LOW) and np.array_equal(STATE_HIGH[-100:], OBS_HIGH[-100:])


def _within(x: np.ndarray, low: np.ndarray, high: np.ndarray, what: str) -> None:
    outside = np.flatnonzero((x < low) | (x > high))
    assert outside.size == 0, f"{what}: values {outside[:5]} ({x[outside[:5]]}) outside the bounds"


@pytest.mark.parametrize("rules", ["standard", "declarer_only", LARGE], ids=["standard", "declarer_only", "large"])
def test_every_observation_of_random_games_lies_within_the_bounds_of_its_rules(rules):
    obs_low, obs_high = observation_bounds(rules)
    info_low, info_high = information_state_bounds(rules)
    state_low, state_high = state_bounds(rules)
    rng = np.random.default_rng(7)
    seen = []
    for game, kind in enumerate(("observation", "information_state")):
        env = barbu_env.env(rules=rules, observation=kind)
        env.reset(seed=game)
        low, high = (obs_low, obs_high) if kind == "observation" else (info_low, info_high)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            _within(obs["observation"], low, high, f"{kind} of {agent}")
            _within(env.state(), state_low, state_high, "state")
            seen.append(obs["observation"][: obs_low.size])
            env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert len(seen) > 2 * 28 * 52, "two whole games were played"
    # the score slices moved: both signs of points and totals were seen
    scores = decode(np.stack(seen))
    assert (scores["hand_points"] < 0).any() and (scores["hand_points"] > 0).any()
    assert (scores["game_scores"] < 0).any() and (scores["game_scores"] > 0).any()


def test_gymnasium_checks_the_environment_without_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gymnasium.make("Barbu-v1").unwrapped)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("rules", ["standard", LARGE], ids=["standard", "large"])
def test_each_environment_s_spaces_are_bounded_by_its_own_rules(rules):
    low, high = observation_bounds(rules)
    aec = barbu_env.env(rules=rules)
    space = aec.observation_space("player_0")["observation"]
    assert np.array_equal(space.low, low) and np.array_equal(space.high, high)
    info = barbu_env.env(rules=rules, observation="information_state").observation_space("player_0")["observation"]
    assert np.array_equal(info.high, information_state_bounds(rules)[1])
    assert np.array_equal(aec.unwrapped.state_space.low, state_bounds(rules)[0])
    gym = gymnasium.make("Barbu-v1", rules=rules).observation_space
    assert np.array_equal(gym.low, low) and np.array_equal(gym.high, high)
    assert (high <= OBS_HIGH).all() and (low >= OBS_LOW).all()
