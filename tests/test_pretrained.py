"""The policies shipped in the package: loadable by name with no training, small, with a
model card, reading today's observation layout, and legal over whole games under every
preset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.agents.pretrained import SHIPPED, pretrained_path
from barbu_env.game.actions import AGENTS
from barbu_env.game.observation import OBS_DIM, OBS_LAYOUT
from barbu_env.game.rules import preset_names


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_policy_is_small_and_has_a_model_card_that_matches_it(name):
    path = pretrained_path(name)
    assert path.stat().st_size < 5_000_000
    payload = torch.load(path, weights_only=True)
    assert payload["model_config"]["obs_layout"] == OBS_LAYOUT and payload["model_config"]["obs_dim"] == OBS_DIM
    card = path.with_suffix(".md").read_text()
    args = payload["args"]
    for fact in (f"observation layout {OBS_LAYOUT}", f"rules preset: `{args['rules']}`", f"{payload['decisions']:,}"):
        assert fact in card, fact


@pytest.mark.parametrize(
    "name, rules",
    [
        (n, r) if r == "standard" or n == "ppo" else pytest.param(n, r, marks=pytest.mark.slow)
        for n in sorted(SHIPPED)
        for r in preset_names()
    ],
)
def test_a_shipped_policy_plays_whole_games_legally_by_name(name, rules):
    env = barbu_env.env(rules=rules)
    env.reset(seed=3)
    agents = {a: make_agent(name, seed=i, rules=rules) for i, a in enumerate(AGENTS)}
    assert agents["player_0"].name == name
    game = env.unwrapped.game
    while not game.is_terminal:
        agent = env.agent_selection
        observation = env.observe(agent)
        action = agents[agent].act(observation, agent)
        assert observation["action_mask"][action]
        env.step(action)
    assert len(game.results) == 28 and sum(game.scores) == sum(sum(r.settled) for r in game.results)


def test_the_shipped_ppo_samples_when_asked():
    greedy, sampler = make_agent("ppo"), make_agent("ppo", seed=2, deterministic=False)
    env = barbu_env.env()
    env.reset(seed=1)
    obs = env.observe(env.agent_selection)
    picks = {sampler.act(obs) for _ in range(50)}
    assert greedy.act(obs) in np.flatnonzero(obs["action_mask"]) and picks <= set(np.flatnonzero(obs["action_mask"]))
