"""PettingZoo's own conformance checks on the AEC environment: ``api_test``,
``seed_test``, ``render_test`` and the AEC part of ``state_test`` (``test_state_space``,
``test_state``).

The checks warn about things that are intended here; every other warning fails a test:
the observation is PettingZoo's masked-dict form (``{"observation", "action_mask"}``, as
in ``pettingzoo.classic``), and the score slices of the observation and the state are
unbounded (``game_scores``, ``hand_points``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test
from pettingzoo.test.state_test import test_state as check_state
from pettingzoo.test.state_test import test_state_space as check_state_space

import barbu_env
from barbu_env import barbu_v1

#: The checks' warnings that describe the environment as designed (module docstring).
INTENDED_WARNINGS = {
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
    "Observation is not a NumPy array",
    "Environment's maximum state space value is infinity. This is probably too high",
    "Environment's minimum state space value is -infinity. This is probably too low.",
}


def run_without_surprises(check, *args, **kwargs) -> None:
    """Run a PettingZoo check; fail on any warning outside ``INTENDED_WARNINGS``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(*args, **kwargs)
    surprises = {str(w.message) for w in caught} - INTENDED_WARNINGS
    assert not surprises, surprises


def test_api_test_passes():
    # (short episodes: test_episode.py's test_pettingzoo_api_test_passes_for_short_episodes)
    run_without_surprises(api_test, barbu_v1.env(), num_cycles=500)


@pytest.mark.parametrize("episode", ["game", "hand"])
def test_seed_test_passes(episode):
    run_without_surprises(seed_test, lambda: barbu_v1.env(episode=episode), num_cycles=200)


def test_render_test_passes():
    render_test(lambda render_mode=None: barbu_env.env(render_mode=render_mode))


def test_state_space_test_passes():
    run_without_surprises(check_state_space, barbu_v1.env())


@pytest.mark.parametrize("episode", ["game", "hand"])
def test_state_test_passes_with_random_unmasked_actions(episode):
    # test_state steps with action_space.sample(), blind to the mask: illegal_action="random"
    # plays a random legal action instead of raising (the default, which the test cannot pass).
    env = barbu_v1.env(episode=episode, illegal_action="random")
    run_without_surprises(check_state, env, num_cycles=200)
    if episode == "hand":
        assert not env.agents  # the hand was played to its end through the random substitutes


def test_illegal_action_random_plays_a_legal_action_instead_and_raise_is_the_default():
    raising, replacing = barbu_v1.env(), barbu_v1.env(illegal_action="random")
    for env in (raising, replacing):
        env.reset(seed=3)
    mask = raising.observe(raising.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(barbu_env.IllegalActionError):
        raising.step(illegal)
    replacing.step(illegal)
    played = replacing.unwrapped.game.history[-1]
    assert played != illegal and mask[played]
    with pytest.raises(ValueError, match="illegal_action"):
        barbu_v1.env(illegal_action="penalty")
