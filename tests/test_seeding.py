"""Seeding follows the Gymnasium/PettingZoo convention in every environment: a seed given
once seeds the environment's own generator, and each later unseeded ``reset()`` continues
it, so two environments seeded alike and reset many times play the same games. A
``reset(seed=...)`` starts the sequence again; an environment never seeded draws fresh
entropy."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import barbu_env
import barbu_env.envs.gym_env  # noqa: F401  (registers Barbu-v1)
from barbu_env.envs.vector_gym import BarbuVectorEnv
from barbu_env.game.vector import VectorBarbu

RESETS = 10


def legal_choice(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def aec_games(env, seed: int | None, resets: int = RESETS, actions_seed: int = 0) -> list[list]:
    """``reset(seed=seed)`` once, then ``resets`` unseeded resets; each episode (one hand)
    played to its end with random legal actions. Returns every episode's trace."""
    rng = np.random.default_rng(actions_seed)
    games = []
    for i in range(resets + 1):
        env.reset(seed=seed if i == 0 else None)
        trace = []
        for agent in env.agent_iter():
            obs, reward, term, trunc, _ = env.last()
            trace.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward))
            env.step(None if term or trunc else legal_choice(rng, obs["action_mask"]))
        games.append(trace)
    return games


def test_aec_seeded_once_then_reset_unseeded_plays_the_same_games():
    a = aec_games(barbu_env.env(episode="hand"), seed=5)
    b = aec_games(barbu_env.env(episode="hand"), seed=5)
    assert a == b
    assert len({g[0][1] for g in a}) == RESETS + 1  # every reset dealt a new game, none repeated
    assert aec_games(barbu_env.env(episode="hand"), seed=6)[1:] != a[1:]  # another seed, other games


def test_aec_seeded_reset_restarts_the_sequence():
    env = barbu_env.env(episode="hand")
    first = aec_games(env, seed=5, resets=2)
    assert aec_games(env, seed=5, resets=2) == first


def test_aec_never_seeded_draws_fresh_entropy():
    assert aec_games(barbu_env.env(episode="hand"), seed=None, resets=1) != aec_games(
        barbu_env.env(episode="hand"), seed=None, resets=1
    )


def gym_games(env, seed: int, actions_seed: int = 0) -> list[list]:
    rng = np.random.default_rng(actions_seed)
    games = []
    for i in range(RESETS + 1):
        obs, info = env.reset(seed=seed if i == 0 else None)
        trace = [(info["seat"], obs.tobytes())]
        done = False
        while not done:
            obs, reward, done, _, info = env.step(legal_choice(rng, info["action_mask"]))
            trace.append((obs.tobytes(), reward))
        games.append(trace)
    return games


@pytest.mark.parametrize("seat", [0, "rotate"])
def test_gymnasium_seeded_once_then_reset_unseeded_plays_the_same_games(seat):
    def make():
        return gymnasium.make(barbu_env.GYM_ENV_ID, opponents="random", seat=seat, episode="hand")

    a, b = gym_games(make(), seed=5), gym_games(make(), seed=5)
    assert a == b
    assert len({g[0] for g in a}) == RESETS + 1
    assert gym_games(make(), seed=6)[1:] != a[1:]


def batched_games(reset, step, seed: int, steps: int = 40) -> list:
    """``reset(seed)`` once then ``RESETS`` unseeded resets, each followed by ``steps``
    random legal steps of every game; returns every observation."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(RESETS + 1):
        obs, masks = reset(seed if i == 0 else None)
        out.append(obs.copy())
        for _ in range(steps):
            actions = np.array([legal_choice(rng, m) for m in masks])
            obs, masks = step(actions)
            out.append(obs.copy())
    return out


def vector_barbu_games(seed: int) -> list:
    vec = VectorBarbu(3, episode="hand")

    def reset(s):
        obs, masks, _ = vec.reset(seed=s)
        return obs, masks

    def step(actions):
        obs, masks, *_ = vec.step(actions)
        return obs, masks

    return batched_games(reset, step, seed)


def vector_env_games(seed: int) -> list:
    envs = BarbuVectorEnv(3, episode="hand")

    def reset(s):
        obs, info = envs.reset(seed=s)
        return obs, info["action_mask"]

    def step(actions):
        obs, _, _, _, info = envs.step(actions)
        return obs, info["action_mask"]

    return batched_games(reset, step, seed)


@pytest.mark.parametrize("games", [vector_barbu_games, vector_env_games], ids=["VectorBarbu", "BarbuVectorEnv"])
def test_batched_seeded_once_then_reset_unseeded_plays_the_same_games(games):
    a, b = games(5), games(5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    starts = a[::41]  # the first observations after each reset
    assert len({s.tobytes() for s in starts}) == RESETS + 1
    assert not all(np.array_equal(x, y) for x, y in zip(games(6), a))
