"""An agent's network computes on one CPU thread and leaves the process's own torch thread
count as it was: loading or playing a shipped policy, or asking the belief network, must
not slow a user's (or the trainer's) own torch work down to one thread; and a tournament's
worker processes, forked after the parent's torch thread pool has started, play on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.belief import probabilities


@pytest.fixture
def three_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(before)


def first_observation() -> tuple[np.ndarray, np.ndarray]:
    env = barbu_env.env()
    env.reset(seed=11)
    obs = env.observe(env.agent_selection)
    return obs["observation"][None], obs["action_mask"][None].astype(bool)


def test_a_shipped_policy_loads_and_acts_on_one_thread_and_leaves_the_callers_count(three_threads):
    agent = make_agent("ppo-expert", seed=1)
    assert torch.get_num_threads() == 3
    inside = []
    hooks = [m.register_forward_hook(lambda *_: inside.append(torch.get_num_threads())) for m in agent.model.modules()]
    obs, mask = first_observation()
    try:
        agent.act_batch(obs, mask)
        agent.probs_batch(obs, mask)
    finally:
        for hook in hooks:
            hook.remove()
    assert inside and set(inside) == {1}
    assert torch.get_num_threads() == 3


def test_the_belief_network_leaves_the_callers_thread_count(three_threads):
    obs, _ = first_observation()
    p = probabilities(obs[0], model="belief")
    assert p.shape == (52, 4)
    assert torch.get_num_threads() == 3


@pytest.mark.slow  # tournament worker processes importing torch
def test_tournament_workers_forked_after_torchs_thread_pool_started_play_a_users_torch_agent():
    script = textwrap.dedent(
        """
        import numpy as np
        import torch
        from barbu_env.agents import register
        from barbu_env.agents.random_agent import RandomAgent
        from barbu_env.evaluation.tournament import evaluate

        class TorchRandom(RandomAgent):  # a user's own agent, computing with torch as it acts
            def act_batch(self, observations, masks, instances=None):
                x = torch.as_tensor(np.asarray(observations, dtype=np.float32)).repeat(200, 1)
                float((x * 2).sum())  # large enough to run on several threads
                return super().act_batch(observations, masks, instances)

        register("torch-random")(lambda seed=0, **_: TorchRandom(seed=seed))
        torch.set_num_threads(2)
        a = torch.randn(1500, 1500)
        (a @ a).sum()  # torch's thread pool starts in this process, before the fork
        r = evaluate(["torch-random", "ppo-expert", "random", "random"], games=8, seed=1, workers=2, progress=False)
        print("played", r.games, torch.get_num_threads())
        """
    )
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    child = subprocess.Popen([sys.executable, "-c", script], **pipes, text=True, start_new_session=True)
    try:
        out, err = child.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the hung workers too
        child.communicate()
        pytest.fail("the tournament's workers hung on torch's thread pool")
    assert child.returncode == 0, err[-2000:]
    assert out.split() == ["played", "8", "2"]
