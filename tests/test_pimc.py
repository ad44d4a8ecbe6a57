"""The ``pimc`` search agent: legal and deterministic everywhere, its rollouts play the
hand as the environment does, its parameters from keywords and from the command line."""

from __future__ import annotations

import numpy as np
import pytest
from test_oracle import RULESETS

import barbu_env
from barbu_env.agents import act_rows, make_agent
from barbu_env.agents.pimc import PimcAgent, rollout_values
from barbu_env.game.actions import AGENTS
from barbu_env.game.constants import Phase
from barbu_env.game.observation import decode
from barbu_env.game.position import Positions
from barbu_env.game.vector import VectorBarbu


def random_positions(rules, games: int, every: int, seed: int):
    """Observations and masks of the seat to act at every ``every``-th decision of random
    games on the batched engine (forced decisions included)."""
    vec = VectorBarbu(games, rules=rules, seed=seed)
    obs, masks, _ = vec.reset()
    rng = np.random.default_rng(seed)
    out_obs, out_masks = [], []
    for t in range(1600):
        if t % every == 0 or t < 12:  # the first hand's declaration and doubling turns too
            out_obs.append(obs.copy())
            out_masks.append(masks.copy())
        picks = [rng.choice(np.flatnonzero(m)) for m in masks]
        obs, masks, *_ = vec.step(np.array(picks))
    return np.concatenate(out_obs), np.concatenate(out_masks)


@pytest.mark.parametrize("name", list(RULESETS))
def test_pimc_takes_only_legal_actions_and_is_deterministic_for_a_seed(name):
    rules = RULESETS[name]
    obs, masks = random_positions(rules, games=3, every=97, seed=len(name))
    assert (masks.sum(axis=1) == 1).any() and (masks.sum(axis=1) > 1).any()
    phases = {Phase(int(p)) for p in decode(obs)["phase"].argmax(axis=1)}
    assert {Phase.DECLARE, Phase.DOUBLE, Phase.TRICKS} <= phases
    # the contract baselines (a few seconds of rollouts per rules) under the standard rules only
    baseline = name == "standard"
    agents = [PimcAgent(seed=5, rules=rules, worlds=2, baseline=baseline) for _ in range(len(obs))]
    first = act_rows(agents, obs, masks)
    assert masks[np.arange(len(obs)), first].all()
    again = act_rows([PimcAgent(seed=5, rules=rules, worlds=2, baseline=baseline) for _ in obs], obs, masks)
    assert (first == again).all()


def test_a_rollout_plays_the_hand_as_the_environment_with_the_same_policy():
    rules = barbu_env.game.rules.load_rules("standard")
    heuristic = make_agent("heuristic", rules=rules)
    for seed in range(3):
        env = barbu_env.env(rules=rules)
        env.reset(seed=seed)
        game = env.unwrapped.game
        rng = np.random.default_rng(seed)
        for _ in range(int(rng.integers(0, 40))):  # somewhere in the first hand
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        me = game.current_player
        position = Positions.from_state(game)
        first = int(rng.choice(game.legal_actions()))
        value, decisions = rollout_values(position, np.array([first]), rules, heuristic, observer=me)
        env.step(first)
        while env.unwrapped.game.hand_number == 0:
            agent = env.agent_selection
            env.step(heuristic.act(env.observe(agent), agent))
        assert value[0] == game.results[0].settled[me]
        assert decisions > 0


def test_pimc_parameters_from_keywords_and_from_a_spec():
    a = make_agent("pimc", seed=1, worlds=3, rollout="random", baseline=False)
    b = make_agent("pimc:worlds=3,rollout=random,baseline=false", seed=1)
    assert (a.worlds, a.rollout, a.baseline) == (b.worlds, b.rollout, b.baseline) == (3, "random", False)
    with pytest.raises(ValueError, match="has no parameter depth"):
        make_agent("heuristic:depth=2")
    with pytest.raises(ValueError, match="pimc: worlds must be at least 1"):
        make_agent("pimc:worlds=0")
    with pytest.raises(ValueError, match="rollout must be another agent"):
        make_agent("pimc:rollout=pimc")


def test_a_time_limit_stops_the_search_early_and_still_answers_legally():
    obs, masks = random_positions("standard", games=2, every=53, seed=9)
    rows = np.flatnonzero(masks.sum(axis=1) > 1)[:4]
    hurried, patient = PimcAgent(seed=0, worlds=64, time_limit=1e-6), PimcAgent(seed=0, worlds=64)
    actions = hurried.act_batch(obs[rows], masks[rows])
    assert masks[rows, actions].all()
    patient.act_batch(obs[rows], masks[rows])
    # one round of 8 worlds, not 64
    assert hurried.rollout_decisions * 8 == pytest.approx(patient.rollout_decisions, rel=0.3)


def test_pimc_plays_whole_games_in_the_environment():
    env = barbu_env.env(rules="classic")
    env.reset(seed=2)
    agents = {a: make_agent("pimc:worlds=2", seed=i, rules="classic") for i, a in enumerate(AGENTS)}
    while env.unwrapped.game.hand_number < 2:
        agent = env.agent_selection
        env.step(agents[agent].act(env.observe(agent), agent))
    assert len(env.unwrapped.game.results) == 2


def test_worlds_from_belief_searches_consistent_worlds_drawn_from_the_belief_network():
    from barbu_env import belief

    rules = RULESETS["standard"]
    obs, masks = random_positions(rules, games=3, every=37, seed=23)
    played = decode(obs)["played"].reshape(len(obs), -1).sum(axis=1)
    rows = np.flatnonzero((masks.sum(axis=1) > 1) & (played > 0))[:12]
    assert len(rows) >= 6
    obs, masks = obs[rows], masks[rows]
    # the worlds the search plays hold exactly the unseen cards, in the sizes and exclusions shown
    rng = np.random.default_rng(0)
    for o, drawer in zip(obs, belief.samplers(obs, model=belief.load_model())):
        Positions.from_observation(o, rules).with_hidden(drawer.draw(8, rng), check=True)
    uniform, default = (PimcAgent(seed=3, rules=rules, worlds=8, worlds_from=w) for w in ("uniform", "uniform"))
    guided = make_agent("pimc:worlds=8,worlds_from=belief", seed=3, rules=rules)
    assert (guided.name, default.name) == ("pimc8-heuristic-belief", "pimc8-heuristic")
    assert guided.batch_key != uniform.batch_key
    with_belief, without = guided.search(obs, masks), uniform.search(obs, masks)
    assert all(masks[i, with_belief[i][0]].all() for i in with_belief)
    # the same seed and worlds count: only where the worlds come from differs, and it shows
    assert any(not np.allclose(with_belief[i][1], without[i][1]) for i in without)
    same = PimcAgent(seed=3, rules=rules, worlds=8).search(obs, masks)
    assert all(np.array_equal(same[i][1], without[i][1]) for i in without)
    assert make_agent("pimc-ppo:worlds_from=belief", seed=0).name == "pimc-ppo-belief"


def test_worlds_from_names_uniform_belief_or_a_checkpoint_file_else_one_line_refusal():
    with pytest.raises(
        ValueError, match="worlds_from must be 'uniform', 'belief' or a belief network's checkpoint"
    ) as e:
        PimcAgent(worlds_from="beleif")
    assert "\n" not in str(e.value) and len(str(e.value)) < 400


@pytest.mark.slow  # forked workers after torch's thread pool started: tests/test_torch_threads.py
def test_a_tournament_of_belief_searches_on_worker_processes_finishes():
    # Worker processes are forked after the agents are made: the belief network must not
    # leave torch's thread pool in a state a forked child waits on for ever.
    import subprocess
    import sys

    spec = "pimc:worlds=2,worlds_from=belief"
    command = [sys.executable, "-m", "barbu_env.cli.main", "eval", "--agents", ",".join([spec] + ["pimc:worlds=2"] * 3)]
    command += ["--games", "8", "--seed", "1", "--workers", "2", "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "worlds_from=belief" in done.stdout


def test_worlds_from_takes_a_path_object_and_lists_of_observations_and_names_the_checkpoint(tmp_path):
    import shutil
    from pathlib import Path

    from barbu_env import belief

    copy = tmp_path / "mine.pt"
    shutil.copy(belief.SHIPPED_MODEL, copy)
    agent = PimcAgent(worlds=2, worlds_from=Path(copy))
    assert agent.name == "pimc2-heuristic-belief-mine" and agent.worlds_from == str(copy)
    e = barbu_env.env()
    e.reset(seed=4)
    while True:  # to the first decision with a choice
        observation = e.observe(e.agent_selection)
        if observation["action_mask"].sum() > 1:
            break
        e.step(int(np.argmax(observation["action_mask"])))
    action = agent.act_batch([observation["observation"]], [observation["action_mask"]])
    assert observation["action_mask"][action[0]]
    with pytest.raises(ValueError, match="README.md is not a belief network checkpoint") as info:
        PimcAgent(worlds_from=str(Path(__file__).parents[1] / "README.md"))
    assert "\n" not in str(info.value)
