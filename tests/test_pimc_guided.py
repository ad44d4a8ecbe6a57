"""The guided search, ``pimc-ppo``: a trained policy as every seat's rollout policy and as
the prior that answers near-certain decisions and chooses the actions searched."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from test_pimc import random_positions  # noqa: E402

from barbu_env.agents import make_agent  # noqa: E402
from barbu_env.agents.pimc import PimcAgent, prior_actions  # noqa: E402
from barbu_env.game.constants import Phase  # noqa: E402
from barbu_env.game.observation import decode  # noqa: E402
from barbu_env.game.rules import load_rules  # noqa: E402

RULES = load_rules("standard")


@pytest.fixture(scope="module")
def positions():
    obs, masks = random_positions(RULES, games=2, every=41, seed=3)
    choice = masks.sum(axis=1) > 1
    return obs[choice], masks[choice]


class CountingAgent:
    """Wraps an agent and counts the batches it is asked (a rollout policy's calls)."""

    def __init__(self, agent):
        self.agent, self.calls, self.rows = agent, 0, 0
        self.name = agent.name

    def act_batch(self, observations, masks):
        self.calls += 1
        self.rows += len(observations)
        return self.agent.act_batch(observations, masks)


def phases_of(obs):
    return np.array([Phase(int(p)) for p in decode(obs)["phase"].argmax(axis=1)])


def test_a_certain_prior_answers_every_decision_with_its_most_likely_action_without_search(positions):
    obs, masks = positions
    agent = make_agent("pimc-ppo:worlds=2,certain=0.01,baseline=false", seed=1)
    policy = make_agent("ppo-finetuned")
    actions = agent.act_batch(obs, masks)
    assert (actions == policy.act_batch(obs, masks)).all()
    assert agent.rollout_decisions == 0 and agent.searched == 0 and agent.certain_answers == len(obs)


def test_the_search_keeps_only_the_priors_top_actions_outside_the_declarers_choices(positions):
    obs, masks = positions
    agent = make_agent("pimc-ppo:worlds=2,cover=0.01,certain=1.0,baseline=false", seed=1)
    probs = agent.prior_agent.probs_batch(obs, masks)
    searched = agent.search(obs, masks)
    phases = phases_of(obs)
    assert len(searched) == len(obs)
    for i, (legal, values) in searched.items():
        if phases[i] in (Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK):
            assert legal.tolist() == np.flatnonzero(masks[i]).tolist()
        else:
            top_two = np.argsort(-probs[i], kind="stable")[:2]
            assert sorted(legal.tolist()) == sorted(top_two.tolist())
        assert len(values) == len(legal) and np.isfinite(values).all()
    assert {Phase.DECLARE, Phase.TRICKS} <= set(phases.tolist())
    unpruned = agent.search(obs, masks, prune=False)
    assert all(legal.tolist() == np.flatnonzero(masks[i]).tolist() for i, (legal, _) in unpruned.items())


def test_every_rollout_step_is_one_call_of_the_policy_for_all_decisions_worlds_and_actions(positions):
    obs, masks = positions[0][:6], positions[1][:6]

    def searched(rows):
        agents = [PimcAgent(seed=2, rules=RULES, worlds=4, rollout="ppo-finetuned", baseline=False) for _ in rows]
        agents[0].rollout_agent = counting = CountingAgent(agents[0].rollout_agent)
        agents[0].act_batch(obs[rows], masks[rows], instances=agents)
        return counting

    together = searched(list(range(6)))
    alone = [searched([i]) for i in range(6)]
    assert together.rows == sum(a.rows for a in alone) > 6 * 2 * 4 * 13  # decisions x actions x worlds x turns
    assert together.calls <= max(a.calls for a in alone) + 4 < sum(a.calls for a in alone) / 2


def test_the_guided_search_plays_only_legal_actions_and_repeats_itself_for_a_seed(positions):
    obs, masks = positions
    first = make_agent("pimc-ppo:worlds=2,baseline=false", seed=4).act_batch(obs, masks)
    again = make_agent("pimc-ppo:worlds=2,baseline=false", seed=4).act_batch(obs, masks)
    assert masks[np.arange(len(obs)), first].all() and (first == again).all()


def test_the_guided_searchs_parameters_are_checked_and_named():
    assert make_agent("pimc-ppo").name == "pimc-ppo"
    agent = make_agent("pimc-ppo:worlds=8,cover=0.9")
    assert (agent.worlds, agent.cover, agent.prior, agent.rollout) == (8, 0.9, "ppo-finetuned", "ppo-finetuned")
    assert agent.name != "pimc-ppo"
    for spec, words in [
        ("pimc-ppo:prior=pimc", "prior"),
        ("pimc-ppo:prior=heuristic", "probabilities"),
        ("pimc-ppo:rollout=pimc-ppo", "rollout"),
    ]:
        with pytest.raises(ValueError, match=words):
            make_agent(spec)


def test_the_prior_rule_covers_the_probability_asked_with_at_least_two_actions():
    p = np.zeros(85)
    p[[10, 11, 12]] = [0.97, 0.02, 0.01]
    legal = np.array([10, 11, 12])
    assert prior_actions(p, legal, 0.5).tolist() == [10, 11]
    assert prior_actions(p, legal, 0.99).tolist() == [10, 11]
    assert prior_actions(p, legal, 0.995).tolist() == [10, 11, 12]
