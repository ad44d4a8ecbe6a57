"""The policy that reads where the hidden cards are: ``belief_rows`` (``PolicyConfig.belief_hidden``,
``barbu_models.policy.with_belief_rows``): the rows it computes, a network grown with them acting
as before, and runs that train, resume, chain and play with them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from tiny_runs import tiny

from barbu_env import belief
from barbu_env.agents.pretrained import pretrained_path
from barbu_env.agents.registry import make_agent
from barbu_env.evaluation.tournament import evaluate
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.observation import OBS_DIM, OFFSETS
from barbu_env.game.vector import VectorBarbu
from barbu_models.policy import (
    BarbuActorCritic,
    checked_config,
    load_checkpoint,
    with_belief_rows,
)
from barbu_training import config, exploit
from barbu_training.run import Trainer
from barbu_training.stages import stage_args
from barbu_training.train import plan_stages


@pytest.fixture(scope="module")
def positions() -> torch.Tensor:
    """Observations of random play at every stage of the game (every contract is played)."""
    env = VectorBarbu(16, seed=3, copy=False)
    obs, masks, _ = env.reset()
    rng, kept = np.random.default_rng(3), []
    for t in range(1200):
        obs, masks = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))[:2]
        if t % 25 == 0:
            kept.append(obs.copy())
    return torch.from_numpy(np.concatenate(kept))


def test_a_network_grown_with_belief_rows_acts_and_values_as_before(positions):
    start, _ = load_checkpoint(pretrained_path("ppo-belief"))
    grown = with_belief_rows(start, config.shipped_belief())
    assert (grown.config.belief_hidden, grown.config.belief_layers) == tuple(config.shipped_belief_shape().values())
    state = torch.rand(len(positions), start.config.state_dim)
    with torch.no_grad():
        for a, b in zip(start.heads(positions, state), grown.heads(positions, state), strict=True):
            assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
    assert not any(p.requires_grad for p in grown.belief.parameters())  # frozen: training never moves it


def test_the_belief_rows_are_probabilities_of_the_seats_that_may_hold_each_unseen_card(positions):
    start, _ = load_checkpoint(pretrained_path("ppo-expert"))
    grown = with_belief_rows(start, config.shipped_belief())
    with torch.no_grad():
        rows = grown.belief_rows(positions).numpy()  # [n, 3, 52]
    x = positions.numpy()
    cards = x[:, : 18 * NUM_CARDS].reshape(-1, 18, NUM_CARDS)
    hand, played = cards[:, OFFSETS["hand"][0] // NUM_CARDS], cards[:, 5:9].sum(1)
    assert OFFSETS["played"][0] // NUM_CARDS == 5
    excluded = cards[:, OFFSETS["excluded"][0] // NUM_CARDS + 1 : OFFSETS["excluded"][1] // NUM_CARDS]
    left = np.round(x[:, OFFSETS["cards_left"][0] + 1 : OFFSETS["cards_left"][1]] * 13)
    seen = (hand + played) > 0.5
    assert (rows[np.broadcast_to(seen[:, None], rows.shape)] == 0).all()  # a seen card is in no hidden hand
    assert (rows[excluded > 0.5] == 0).all()  # nor with a seat known not to hold it
    assert (rows[np.broadcast_to(left[:, :, None] == 0, rows.shape)] == 0).all()  # nor with an empty hand
    sums = rows.sum(1)
    assert np.allclose(sums[~seen], 1.0, atol=1e-5) and (sums[seen] == 0).all()
    # near the exact probabilities of barbu_env.belief (its fit to the hands' counts is exact; the rows' is close)
    model = belief.load_model()
    exact = np.stack([belief.probabilities(o, model=model)[:, 1:].T for o in x])
    uniform = np.stack([belief.probabilities(o, model=belief.UNIFORM)[:, 1:].T for o in x])
    assert np.abs(rows - exact).mean() < 0.1 * np.abs(uniform - exact).mean()


@pytest.mark.slow  # a training run
def test_a_run_with_belief_rows_trains_the_policy_around_a_frozen_belief_network_and_its_checkpoint_plays(tmp_path):
    plain = Trainer(config.Args(run_dir=str(tmp_path), exp_name="a", **tiny()))
    start = plain.checkpoint(tmp_path / "a.pt")
    config.shipped_belief_shape.cache_clear()  # first asked by the preflight, under torch's meta device
    run = Trainer(config.Args(run_dir=str(tmp_path), exp_name="b", init=str(start), belief_rows=True, **tiny()))
    shipped = config.shipped_belief()
    assert run.model.config.belief_hidden == shipped.net.config.hidden
    frozen = {k: v.clone() for k, v in run.model.belief.state_dict().items()}
    obs = torch.rand(5, OBS_DIM)
    with torch.no_grad():
        assert torch.allclose(run.model(obs)[0], plain.model(obs)[0], atol=1e-5)  # the policy it started from
        assert torch.allclose(run.model.belief(obs), shipped.net.eval()(obs) / shipped.temperature, atol=1e-5)
    trunk = run.model.trunk[0].weight.detach().clone()
    run.iterate()
    assert all(torch.equal(v, run.model.belief.state_dict()[k]) for k, v in frozen.items())
    assert not torch.equal(trunk, run.model.trunk[0].weight)
    path = run.checkpoint(tmp_path / "b.pt")
    assert load_checkpoint(path)[0].config.belief_hidden == shipped.net.config.hidden
    result = evaluate([str(path), "random", "random", "random"], games=4, seed=0, workers=1)
    assert result.games == 4
    assert make_agent(str(path), seed=0).name
    # it resumes (Adam holds no state for the frozen weights) ...
    resumed = Trainer(config.Args(run_dir=str(tmp_path), exp_name="b", resume=str(path), belief_rows=True, **tiny()))
    assert resumed.iteration == run.iteration
    # ... but not as a run without the rows, and a run without them cannot start from it
    with pytest.raises(config.ConfigError, match="belief rows.*not a training checkpoint of .*no belief rows"):
        Trainer(config.Args(run_dir=str(tmp_path), exp_name="d", resume=str(path), **tiny()))
    with pytest.raises(ValueError, match=r"belief rows \(256x2\)\) is not the one this config builds .*no belief rows"):
        Trainer(config.Args(run_dir=str(tmp_path), exp_name="c", init=str(path), **tiny()))


def test_belief_rows_in_a_chain_are_added_never_dropped_and_an_expert_stage_keeps_its_inits(tmp_path):
    base = {"run_dir": str(tmp_path), "exp_name": "x", **tiny()}
    assert [a.belief_rows for a in stage_args(config.Args(**base, stages=[{}, {"belief_rows": True}]))] == [False, True]
    with pytest.raises(config.ConfigError, match="belief_rows false cannot start"):
        stage_args(config.Args(**base, stages=[{"belief_rows": True}, {"belief_rows": False}]))
    expert = {"expert": {"games": 2}}
    # an expert stage trains its init's network: rows before it are rows after it, none before it none after
    stage_args(config.Args(**base, stages=[{"belief_rows": True}, expert, {"belief_rows": True}]))
    stage_args(config.Args(**base, stages=[{}, expert, {}]))
    with pytest.raises(config.ConfigError, match="stage 3.*belief_rows false cannot start from stage 2"):
        stage_args(config.Args(**base, stages=[{"belief_rows": True}, expert, {}]))
    with pytest.raises(config.ConfigError, match="hands_coef and belief_rows are PPO's"):
        stage_args(config.Args(**base, stages=[{}, expert | {"belief_rows": True}]))
    # a privileged critic is followed through an expert stage alike (the expert stage need not say it)
    stage_args(config.Args(**base, stages=[{"central_critic": True}, expert, {"central_critic": True}]))
    with pytest.raises(config.ConfigError, match="stage 3.*central_critic false cannot start from stage 2"):
        stage_args(config.Args(**base, stages=[{"central_critic": True}, expert, {}]))


@pytest.mark.slow  # a training run
def test_a_privileged_critic_is_added_to_a_network_with_belief_rows_and_the_policy_is_unchanged(tmp_path):
    rows = Trainer(config.Args(run_dir=str(tmp_path), exp_name="r", belief_rows=True, **tiny()))
    rows.iterate()  # the trunk learns to read the rows
    path = rows.checkpoint(tmp_path / "r.pt")
    both = Trainer(
        config.Args(
            run_dir=str(tmp_path), exp_name="c", init=str(path), belief_rows=True, central_critic=True, **tiny()
        )
    )
    assert both.model.config.state_dim and both.model.config.belief_hidden
    obs = torch.rand(4, OBS_DIM)
    with torch.no_grad():
        assert torch.equal(
            both.model.distribution(obs, torch.ones(4, 85)).logits,
            rows.model.distribution(obs, torch.ones(4, 85)).logits,
        )
    both.iterate()


@pytest.mark.slow  # a training run
def test_the_best_response_to_a_network_with_belief_rows_trains_the_same_network(tmp_path):
    rows = Trainer(config.Args(run_dir=str(tmp_path), exp_name="r", belief_rows=True, **tiny()))
    path = rows.checkpoint(tmp_path / "r.pt")
    args = exploit.best_response_args(str(path), 2000, run_dir=str(tmp_path))
    assert args.belief_rows and args.init == str(path)
    assert Trainer(args).model.config == rows.model.config


@pytest.mark.parametrize(
    "fields",
    [
        {"belief_hidden": 8},
        {"belief_hidden": 9000, "belief_layers": 1},
    ],
)
def test_a_checkpoint_with_half_a_belief_network_or_one_too_big_is_refused(fields):
    made = dataclasses.asdict(BarbuActorCritic(checked_config({})).config) | fields
    with pytest.raises(ValueError, match="belief sizes both 0 or within the sizes"):
        checked_config(made)


@pytest.mark.slow  # a training stage
def test_a_chain_whose_stage_cannot_start_from_the_network_it_is_given_is_refused_before_any_stage_runs(tmp_path):
    rows = Trainer(config.Args(run_dir=str(tmp_path), exp_name="r", belief_rows=True, **tiny()))
    path = str(rows.checkpoint(tmp_path / "r.pt"))
    base = {"run_dir": str(tmp_path), "exp_name": "x", **tiny()}
    expert = {"expert": {"games": 2, "worlds": 2, "searcher": "pimc"}}
    for stages, stage in [
        ([{}, {"init": path}], 2),  # a later stage's own init, with rows it would drop
        ([{"init": path} | expert, {}], 2),  # an expert stage keeps its init's rows: the next must read them
    ]:
        with pytest.raises(config.ConfigError, match=rf"stage {stage} of 2 .*belief rows \(256x2\).*no belief rows"):
            plan_stages(config.Args(**base, stages=stages))
    assert not (tmp_path / "x-1").exists()
    plan_stages(config.Args(**base, stages=[{"init": path} | expert, {"belief_rows": True}]))
