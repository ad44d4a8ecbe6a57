"""PettingZoo's own tools on the environments docs/integrations.md gives them ("PettingZoo's
own tools"): the parallel API through ``barbu_v1.parallel_env`` (PettingZoo's
``turn_based_aec_to_parallel``), and each check or utility of the page's table run on the
environment its row names, read from the page (the table gives the tools that sample blind
to the mask ``illegal_action="random"``). ``api_test``, ``seed_test`` and ``render_test``,
whose rows name the default environment, and the AEC part of ``state_test``:
tests/test_pettingzoo_api.py."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import (
    parallel_api_test,
    parallel_seed_test,
    performance_benchmark,
    state_test,
)
from pettingzoo.utils import BaseWrapper, average_total_reward
from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

import barbu_env
from barbu_env import barbu_v1
from barbu_env.game.actions import AGENTS

INTEGRATIONS = (Path(__file__).resolve().parent.parent / "docs" / "integrations.md").read_text()


def documented_environments() -> dict[str, list[str]]:
    """The tools table of docs/integrations.md: tool name -> the expressions of its "environment to pass"."""
    table = INTEGRATIONS[INTEGRATIONS.index("| tool (`pettingzoo.test`") :].split("\n\n")[0]
    rows = {}
    for line in table.splitlines()[2:]:
        tool, environments, _ = (cell.strip() for cell in line.strip().strip("|").split(" | "))
        name = re.match(r"`(?:[\w.]+\.)?(\w+)\(", tool).group(1)
        rows[name] = re.findall(r"`([^`]+)`", environments)
    return rows


DOCUMENTED = documented_environments()


def made(expression: str):
    """An environment (or environment factory) from the docs' expression."""
    return eval(expression, {"barbu_v1": barbu_v1})


class ScoresAtTheEnd(BaseWrapper):
    """Records the game's scores whenever an episode ends."""

    def __init__(self, env):
        super().__init__(env)
        self.scores: list[list[int]] = []

    def step(self, action):
        super().step(action)
        if action is not None and all(self.terminations.values()):
            self.scores.append(list(self.unwrapped.game.scores))


# ---------------------------------------------------------------------- the parallel API


def test_parallel_env_is_pettingzoos_turn_based_conversion():
    env = barbu_v1.parallel_env(episode="hand", rules="classic")
    assert isinstance(env, turn_based_aec_to_parallel_wrapper)
    assert isinstance(env.unwrapped, barbu_env.raw_env) and env.unwrapped.episode == "hand"


@pytest.mark.parametrize("episode", ["hand", "round"])
def test_parallel_rewards_sum_to_each_agents_score_and_only_the_agent_to_act_plays(episode):
    env = barbu_v1.parallel_env(episode=episode)
    observations, _ = env.reset(seed=4)
    rng = np.random.default_rng(4)
    totals = dict.fromkeys(AGENTS, 0)
    steps = 0
    while env.agents:
        acting = [a for a, o in observations.items() if o["action_mask"].any()]
        assert acting == [env.unwrapped.agent_selection]  # exactly one agent has legal actions
        # Every agent sends an action; the others' (illegal ones here) are ignored.
        actions = {a: int(np.flatnonzero(o["action_mask"] == 0)[0]) for a, o in observations.items()}
        actions[acting[0]] = int(rng.choice(np.flatnonzero(observations[acting[0]]["action_mask"])))
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for agent, reward in rewards.items():
            totals[agent] += reward
        steps += 1
    assert [totals[a] for a in AGENTS] == env.unwrapped.game.scores and any(totals.values())
    assert steps == len(env.unwrapped.game.history)


# ---------------------------------------------------------------------- the tools, as the docs table gives them


def test_the_docs_table_gives_every_tool_run_here():
    assert set(DOCUMENTED) == {
        "api_test",
        "seed_test",
        "render_test",
        "parallel_api_test",
        "performance_benchmark",
        "state_test",
        "parallel_seed_test",
        "average_total_reward",
    }


def quietly(check, *args, **kwargs):
    """Run a PettingZoo tool, its prints and warnings aside (their content is tested elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check(*args, **kwargs)


def test_parallel_api_test_passes_on_the_documented_environment(capsys):
    (expression,) = DOCUMENTED["parallel_api_test"]
    quietly(parallel_api_test, made(expression), num_cycles=2000)  # two whole games
    assert "Passed Parallel API test" in capsys.readouterr().out


def test_state_test_passes_on_the_documented_environments():
    env, parallel = (made(e) for e in DOCUMENTED["state_test"])
    quietly(state_test, env, parallel, num_cycles=100)
    assert env.unwrapped.illegal_action == "random"


def test_parallel_seed_test_passes_on_the_documented_environment():
    (expression,) = DOCUMENTED["parallel_seed_test"]
    quietly(parallel_seed_test, made(expression), num_cycles=50)


def test_average_total_reward_is_the_mean_of_the_four_scores_summed(capsys):
    (expression,) = DOCUMENTED["average_total_reward"]
    env = ScoresAtTheEnd(made(expression))
    env.reset(seed=0)
    average = average_total_reward(env, max_episodes=3)
    assert len(env.scores) == 3 and average == pytest.approx(np.mean([sum(s) for s in env.scores]))
    assert all(sum(s) for s in env.scores)  # a hand is not zero-sum: the average is not trivially 0
    assert "Average total reward" in capsys.readouterr().out


@pytest.mark.slow  # PettingZoo's benchmark runs for a fixed five seconds; stepping with the mask: api_test
def test_performance_benchmark_runs_on_the_documented_environment(capsys):
    (expression,) = DOCUMENTED["performance_benchmark"]
    performance_benchmark(made(expression))
    assert "turns per second" in capsys.readouterr().out
