"""Training: the masked distribution, per-seat GAE and reward bookkeeping, trained policies
as agents, checkpoints, configs, and a tiny end-to-end run that trains, checkpoints,
resumes and evaluates."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_runs import tiny

from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.game.observation import OBS_DIM, PRIVILEGED_DIM, decode
from barbu_env.game.rules import load_rules
from barbu_models.policy import (
    BarbuActorCritic,
    MaskedCategorical,
    PolicyConfig,
    load_checkpoint,
    save_checkpoint,
    with_privileged_critic,
)
from barbu_training import config, config_cli, ppo, rollout
from barbu_training.policy_agent import PolicyAgent, load_policy_agent
from barbu_training.run import Trainer, TrainingInterrupted, evaluate_checkpoint
from barbu_training.train import train

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------- the distribution


def test_masked_actions_get_probability_zero_and_the_rest_renormalize():
    logits = torch.log(torch.tensor([[0.2, 0.2, 0.6]]))
    d = MaskedCategorical(logits, torch.tensor([[False, True, True]]))
    assert d.probs[0, 0].item() == 0.0
    np.testing.assert_allclose(d.probs[0].tolist(), [0.0, 0.25, 0.75], atol=1e-6)
    samples = MaskedCategorical(logits.expand(2000, 3), torch.tensor([[False, True, True]]).expand(2000, 3)).sample()
    assert (samples != 0).all()


def test_sampling_draws_each_legal_action_with_its_probability():
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.5, 3.0]])
    mask = torch.tensor([[True, True, True, False, True]])
    d = MaskedCategorical(logits.expand(40000, 5), mask.expand(40000, 5))
    counts = torch.bincount(d.sample(torch.Generator().manual_seed(0)), minlength=5).double()
    expected = d.probs[0].double() * 40000
    assert counts[3] == 0
    chi2 = (((counts - expected) ** 2) / expected.clamp(min=1e-9))[mask[0]].sum().item()
    assert chi2 < 16.3  # chi-square, 3 degrees of freedom, p = 0.001
    a = MaskedCategorical(logits, mask).sample(torch.Generator().manual_seed(5))
    assert torch.equal(a, MaskedCategorical(logits, mask).sample(torch.Generator().manual_seed(5)))


def test_entropy_counts_legal_actions_only():
    mask = torch.zeros(3, 85, dtype=torch.bool)
    mask[0, :5] = True
    mask[1, 10:12] = True
    mask[2, 84] = True
    d = MaskedCategorical(torch.randn(3, 85) * 0 + 1.0, mask)  # uniform over the legal actions
    np.testing.assert_allclose(d.entropy().exp().tolist(), [5, 2, 1], rtol=1e-5)
    d = MaskedCategorical(torch.randn(3, 85) * 5, mask)
    assert (d.entropy() <= torch.log(mask.sum(1).float()) + 1e-5).all()


def test_log_prob_of_legal_actions_matches_the_probabilities():
    mask = torch.rand(4, 85) > 0.5
    mask[:, 0] = True
    d = MaskedCategorical(torch.randn(4, 85), mask)
    actions = torch.zeros(4, dtype=torch.long)
    np.testing.assert_allclose(d.log_prob(actions).exp(), d.probs[:, 0], rtol=1e-5)


# ---------------------------------------------------------------------- GAE and rewards


def test_per_seat_gae_follows_each_seats_own_decisions():
    # Two seats interleaved: A decides at t=0, 2, 4 (its last); B at t=1, 3 (its last).
    rewards = np.array([1.0, 0.0, 2.0, 5.0, -1.0])
    values = np.array([0.5, 1.0, 0.0, 2.0, 0.0])
    dones = np.array([False, False, False, True, True])
    next_index = np.array([2, 3, 4, -1, -1])
    g = 0.9
    adv = rollout.per_seat_gae(rewards, values, dones, next_index, gamma=g, lam=1.0)
    # with lambda = 1 the advantage is the seat's discounted return minus the value
    ret_a = [1 + g * 2 + g * g * -1, 2 + g * -1, -1]
    ret_b = [0 + g * 5, 5]
    np.testing.assert_allclose(adv, [ret_a[0] - 0.5, ret_b[0] - 1.0, ret_a[1] - 0.0, ret_b[1] - 2.0, ret_a[2]])
    # with lambda = 0 it is the one-step TD error along the seat's chain
    adv0 = rollout.per_seat_gae(rewards, values, dones, next_index, gamma=g, lam=0.0)
    np.testing.assert_allclose(adv0, [1 + g * 0.0 - 0.5, 0 + g * 2.0 - 1.0, 2 + g * 0.0 - 0.0, 5 - 2.0, -1 - 0.0])


def test_rewards_land_on_the_decision_before_they_settle_and_discount_with_gamma_below_one():
    # Seats 0 and 1; step 2 ends a hand on seat 0's card (0: +10, 1: -10), step 4 is a forced
    # move (nobody decides), step 5 ends the game on seat 0's card (0: -4, 1: +4).
    from barbu_env.game.credit import credit_steps

    credit = credit_steps(
        deciders=[0, 1, 0, 1, -1, 0],
        rewards=[[0, 0], [0, 0], [10, -10], [0, 0], [0, 0], [-4, 4]],
        game_over=[False, False, False, False, False, True],
    )
    steps = [0, 1, 2, 3, 5]  # the decisions, in time order: transitions 0-4
    index = {step: t for t, step in enumerate(steps)}
    rewards = credit.rewards[steps]
    next_index = np.array([index.get(int(n), -1) for n in credit.next_step[steps]])
    dones = credit.ended[steps]
    # seat 0: 0 (steps 0-1), +10 (steps 2-4), -4 (step 5); seat 1: -10 (steps 1-2), +4 (steps 3-5)
    np.testing.assert_array_equal(rewards, [0, -10, 10, 4, -4])
    np.testing.assert_array_equal(next_index, [2, 3, 4, -1, -1])
    np.testing.assert_array_equal(dones, [False, False, False, True, True])
    # gamma 0.97, lambda 1, values 0: discounted returns, by hand
    returns = rollout.per_seat_gae(rewards, np.zeros(5), dones, next_index, gamma=0.97, lam=1.0)
    np.testing.assert_allclose(returns, [0.97 * (10 + 0.97 * -4), -10 + 0.97 * 4, 10 + 0.97 * -4, 4, -4])
    np.testing.assert_allclose(returns, [5.9364, -6.12, 6.12, 4.0, -4.0])
    # gamma 0.97, lambda 0.95, values 1-5: GAE, by hand (deltas -9, 11.85, 1.91 for seat 0; 0, -8.12 for seat 1)
    adv = rollout.per_seat_gae(rewards, np.arange(1.0, 6.0), dones, next_index, gamma=0.97, lam=0.95)
    np.testing.assert_allclose(adv, [1.91 + 0.9215 * (11.85 - 0.9215 * 9), -8.12, 11.85 - 0.9215 * 9, 0.0, -9.0])


def test_collected_rewards_are_each_seats_score_changes_between_its_decisions_discounted_below_one():
    # A seat's reward is what its game total (the observation's game_scores, in hundreds) gains
    # between its decision and its next one; its returns discount those with gamma 0.97.
    args = config.Args(num_games=2, opp_self=1.0, opp_pool=0.0, opp_baselines=0.0, gamma=0.97, gae_lambda=1.0)
    torch.manual_seed(2)
    model = BarbuActorCritic(config.model_config(args))
    r = rollout.Collector(args, load_rules("standard")).collect(
        model, {}, np.random.default_rng(5), torch.Generator().manual_seed(5)
    )
    totals = np.rint(decode(r.obs)["game_scores"][:, 0] * 100)  # the deciding seat's own total, before it decides
    for g in range(2):
        for seat in range(4):
            mine = np.flatnonzero((r.game_ids == g) & (r.seats == seat))
            gained = np.diff(np.append(totals[mine], r.final_scores[g, seat])) * args.reward_scale
            np.testing.assert_allclose(r.rewards[mine], gained, atol=1e-9)
            by_hand = np.zeros(len(mine))
            running = 0.0
            for j in range(len(mine) - 1, -1, -1):
                running = gained[j] + 0.97 * running
                by_hand[j] = running
            np.testing.assert_allclose(r.returns[mine], by_hand, atol=1e-4)
            assert abs(by_hand[0] - r.final_scores[g, seat] * args.reward_scale) > 1e-3  # timing matters here


@pytest.fixture(scope="module", params=["baselines", "pool"])
def opponent_rollout(request):
    """A rollout where one or two seats learn against random players, or against a pool
    snapshot (a sampling PolicyAgent), gamma = lambda = 1."""
    against_pool = request.param == "pool"
    args = config.Args(
        num_games=6,
        opp_self=0.0,
        opp_pool=float(against_pool),
        opp_baselines=float(not against_pool),
        baselines="random",
        gamma=1.0,
        gae_lambda=1.0,
        reward_scale=0.01,
    )
    torch.manual_seed(0)
    torch.set_num_threads(1)  # small batches: threads only add overhead
    model = BarbuActorCritic(config.model_config(args))
    pool = {3: BarbuActorCritic(config.model_config(args)).state_dict()} if against_pool else {}
    rules, rng, gen = load_rules("standard"), np.random.default_rng(0), torch.Generator().manual_seed(0)
    r = rollout.Collector(args, rules).collect(model, pool, rng, gen)
    assert set(r.kind_scores) == {"pool" if against_pool else "agent"}
    return args, r


def test_each_seat_is_rewarded_with_its_own_scores_only(opponent_rollout):
    args, r = opponent_rollout
    assert r.learning.sum(1).min() >= 1 and r.learning.sum(1).max() <= 2  # one or two learning seats
    assert not r.learning.all(1).any()
    for game in range(len(r.final_scores)):
        for seat in range(4):
            mine = (r.game_ids == game) & (r.seats == seat)
            assert mine.any() == r.learning[game, seat]
            if mine.any():
                # with gamma = lambda = 1 a seat's first return is its whole game's score
                first = np.flatnonzero(mine)[0]
                assert r.returns[first] == pytest.approx(r.final_scores[game, seat] * args.reward_scale, abs=1e-3)
                # and only its last transition ends the game
                assert r.dones[mine].tolist() == [False] * (mine.sum() - 1) + [True]


def test_rollout_stores_the_masks_it_sampled_under(opponent_rollout):
    _, r = opponent_rollout
    assert r.masks.dtype == bool and r.masks.shape == (len(r.actions), 85)
    assert r.masks[np.arange(len(r.actions)), r.actions].all()
    assert len(r.obs) == len(r.actions) == len(r.logprobs) and r.decisions > len(r.actions)
    np.testing.assert_array_equal(r.obs[:, :52].sum(1) > 0, True)  # every decision is made holding cards


@pytest.mark.parametrize("skip_forced", [True, False])
def test_self_play_gives_every_seat_a_chain_from_its_first_decision_to_the_games_end(skip_forced):
    args = config.Args(
        num_games=3, opp_self=1.0, opp_pool=0.0, opp_baselines=0.0, gamma=1.0, gae_lambda=1.0, skip_forced=skip_forced
    )
    torch.manual_seed(1)
    model = BarbuActorCritic(config.model_config(args))
    r = rollout.Collector(args, load_rules("standard")).collect(
        model, {}, np.random.default_rng(2), torch.Generator().manual_seed(2)
    )
    assert r.learning.all() and set(r.kind_scores) == {"self"}
    forced = r.masks.sum(1) == 1
    if skip_forced:  # a quarter or so of all decisions have a single legal action
        assert not forced.any() and 0.1 < 1 - len(r.actions) / r.decisions < 0.4
    else:  # every decision of self-play is a transition
        assert forced.any() and len(r.actions) == r.decisions
    for g in range(3):
        for seat in range(4):
            mine = np.flatnonzero((r.game_ids == g) & (r.seats == seat))
            assert r.returns[mine[0]] == pytest.approx(r.final_scores[g, seat] * args.reward_scale, abs=1e-3)
            # its rewards are its 28 settled hand scores, each on the decision before the hand ended
            assert r.rewards[mine].sum() == pytest.approx(r.final_scores[g, seat] * args.reward_scale, abs=1e-6)
            assert np.count_nonzero(r.rewards[mine]) <= 28
            assert r.dones[mine].tolist() == [False] * (len(mine) - 1) + [True]


def test_the_collectors_buffers_grow_and_keep_what_they_hold():
    args = config.Args(num_games=2, opp_self=1.0, opp_pool=0.0, opp_baselines=0.0)
    collector = rollout.Collector(args, load_rules("standard"), capacity=100)  # far less than a game
    model = BarbuActorCritic(config.model_config(args))
    r = collector.collect(model, {}, np.random.default_rng(3), torch.Generator().manual_seed(3))
    assert collector.capacity >= len(r.actions) > 100
    assert r.masks[np.arange(len(r.actions)), r.actions].all()
    assert set(np.unique(r.game_ids)) == {0, 1}


def test_pool_snapshots_play_as_sampling_policy_agents_and_leave_with_the_pool():
    args = config.Args(num_games=2)
    collector = rollout.Collector(args, load_rules("standard"), capacity=100)
    pool = {sid: BarbuActorCritic(config.model_config(args)).state_dict() for sid in (4, 7)}
    agents = collector.snapshot_agents(pool, np.random.default_rng(0))
    assert [a.name for a in agents] == ["snapshot_4", "snapshot_7"] and not any(a.deterministic for a in agents)
    assert agents[0].generator.initial_seed() != agents[1].generator.initial_seed()
    again = collector.snapshot_agents({7: pool[7]}, np.random.default_rng(1))
    assert again[0].model is agents[1].model and set(collector.snapshot_models) == {7}  # built once, then dropped


# ---------------------------------------------------------------------- checkpoints and configs


def test_a_saved_and_loaded_checkpoint_gives_identical_actions(tmp_path):
    torch.manual_seed(3)
    model = BarbuActorCritic(PolicyConfig(hidden=64, card_embed=8))
    path = tmp_path / "p.pt"
    save_checkpoint(path, model, note="x")
    loaded, payload = load_checkpoint(path)
    assert payload["note"] == "x" and loaded.config == model.config
    obs = np.random.default_rng(0).random((16, OBS_DIM), dtype=np.float32)
    mask = np.random.default_rng(1).random((16, 85)) > 0.3
    with torch.no_grad():
        np.testing.assert_array_equal(model(torch.from_numpy(obs))[0].numpy(), loaded(torch.from_numpy(obs))[0].numpy())
    a = PolicyAgent(model, seed=5, deterministic=False).act_batch(obs, mask)
    b = PolicyAgent(loaded, seed=5, deterministic=False).act_batch(obs, mask)
    np.testing.assert_array_equal(a, b)
    assert mask[np.arange(16), a].all()
    agent1, agent2 = load_policy_agent(path, seed=9), load_policy_agent(path, seed=9)
    obs_dict = {"observation": obs[0], "action_mask": mask[0].astype(np.int8)}
    assert [agent1.act(obs_dict) for _ in range(20)] == [agent2.act(obs_dict) for _ in range(20)]


def test_command_line_flags_override_the_config():
    ns = vars(
        config_cli.build_parser().parse_args(
            [
                "--config",
                str(ROOT / "configs/train/quick.yaml"),
                "--seed",
                "7",
                "--anneal-lr",
                "false",
                "--ent-coef",
                "0.02",
            ]
        )
    )
    args = config_cli.load_args(ns.pop("config"), ns)
    assert (args.seed, args.anneal_lr, args.ent_coef, args.exp_name) == (7, False, 0.02, "quick")


@pytest.mark.parametrize("name", ["quick", "default", "finetune"])
def test_the_shipped_configs_end_on_a_decision_budget_not_a_clock(name):
    # the amount of training, and the strength it buys, must not depend on the machine
    args = config_cli.load_args(str(ROOT / f"configs/train/{name}.yaml"))
    assert args.time_budget_minutes == 0 and 10**6 < args.total_decisions < 10**9


# ---------------------------------------------------------------------- a tiny run


def test_a_run_with_no_final_evaluation_finishes_with_its_summary(tmp_path):
    summary = train(
        config.Args(
            run_dir=str(tmp_path), exp_name="nofinal", total_decisions=100, **tiny(episode="hand", final_eval_games=0)
        )
    )
    saved = json.loads((Path(summary["run"]) / "summary.json").read_text())
    assert saved["final"] == {} and summary["final_results"] == {} and saved["decisions"] >= 100
    assert (Path(summary["run"]) / "checkpoints" / "latest.pt").exists()


def test_privileged_critic_trains_and_the_policy_never_reads_the_hidden_hands(tmp_path):
    trainer = Trainer(config.Args(run_dir=str(tmp_path), exp_name="cc", central_critic=True, **TINY))
    trainer.iterate()
    model, _ = load_checkpoint(trainer.checkpoint(tmp_path / "cc.pt"))
    assert model.config.state_dim == PRIVILEGED_DIM
    obs = torch.rand(5, OBS_DIM)
    hidden = (torch.rand(2, 5, PRIVILEGED_DIM - OBS_DIM) > 0.7).float()
    logits_a, value_a = model(obs, torch.cat([obs, hidden[0]], dim=1))
    logits_b, value_b = model(obs, torch.cat([obs, hidden[1]], dim=1))
    assert torch.equal(logits_a, logits_b)  # acting depends on the observation alone
    assert not torch.equal(value_a, value_b)  # the critic does read the hidden hands


def test_a_privileged_critic_added_to_a_network_starts_as_its_value_head_then_reads_the_hidden_hands():
    torch.manual_seed(3)
    model = BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4, layers=3))
    wide = with_privileged_critic(model, PRIVILEGED_DIM)
    assert wide.config == dataclasses.replace(model.config, state_dim=PRIVILEGED_DIM)
    obs = torch.rand(6, OBS_DIM)
    hidden = (torch.rand(6, PRIVILEGED_DIM - OBS_DIM) > 0.7).float()
    logits, value = model(obs)
    wide_logits, wide_value = wide(obs, torch.cat([obs, hidden], dim=1))
    assert torch.equal(logits, wide_logits)
    assert torch.allclose(value, wide_value, atol=1e-5)
    # the hidden hands' weights start at zero and have a gradient: the critic learns to read them
    wide_value.sum().backward()
    first = next(m for m in wide.critic if isinstance(m, torch.nn.Linear))
    cards = model.config.card_rows * model.config.card_embed  # the hidden hands' columns follow the card rows'
    assert first.weight.grad[:, cards : cards + wide.hidden_rows * model.config.card_embed].abs().sum() > 0


def test_a_run_with_a_privileged_critic_starts_from_a_checkpoint_without_one(tmp_path):
    trainer = Trainer(config.Args(run_dir=str(tmp_path), exp_name="a", **TINY))
    path = trainer.checkpoint(tmp_path / "a.pt")
    started = Trainer(config.Args(run_dir=str(tmp_path), exp_name="b", init=str(path), central_critic=True, **TINY))
    assert started.model.config.state_dim == PRIVILEGED_DIM
    for name, weights in trainer.model.state_dict().items():
        if not name.startswith("critic"):
            assert torch.equal(started.model.state_dict()[name], weights), name
    started.iterate()  # and it trains
    # a run with a privileged critic also starts from a checkpoint that has one
    again = Trainer(
        config.Args(
            run_dir=str(tmp_path),
            exp_name="c",
            init=str(started.checkpoint(tmp_path / "b.pt")),
            central_critic=True,
            **TINY,
        )
    )
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), started.model.parameters(), strict=True))


@pytest.mark.parametrize("layout", [None, 3])
def test_a_checkpoint_of_another_observation_layout_is_refused_with_a_clear_message(tmp_path, layout):
    path = tmp_path / "old.pt"
    model = BarbuActorCritic(PolicyConfig(hidden=16, card_embed=4))
    save_checkpoint(path, model)
    payload = torch.load(path, weights_only=True)
    if layout is None:  # saved before layouts were numbered: layout 1, 924 values
        del payload["model_config"]["obs_layout"]
    else:
        payload["model_config"]["obs_layout"] = layout
    torch.save(payload, path)
    with pytest.raises(ValueError, match=f"reads observation layout {layout or 1}, .*train it again"):
        load_policy_agent(path)
    with pytest.raises(ValueError, match="observation layout"):
        load_checkpoint(path)


def test_checkpoint_agents_play_greedily_unless_asked_to_sample(tmp_path):
    torch.manual_seed(4)
    path = tmp_path / "p.pt"
    save_checkpoint(path, BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4)))
    obs = np.random.default_rng(2).random(OBS_DIM, dtype=np.float32)
    mask = np.zeros(85, dtype=np.int8)
    mask[[3, 10, 40, 84]] = 1
    greedy = load_policy_agent(path, seed=1)
    probs = greedy.probs_batch(obs[None], mask[None])[0]
    assert greedy.act({"observation": obs, "action_mask": mask}) == int(np.argmax(probs))
    sampler = load_policy_agent(path, seed=1, deterministic=False)
    drawn = {sampler.act({"observation": obs, "action_mask": mask}) for _ in range(200)}
    assert drawn <= {3, 10, 40, 84} and len(drawn) > 1


def test_policy_agents_on_one_network_are_asked_together_each_with_its_own_generator(tmp_path):
    from barbu_env.agents import Agent, act_rows

    torch.manual_seed(5)
    model = BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4))
    rng = np.random.default_rng(6)
    obs = rng.random((8, OBS_DIM), dtype=np.float32)
    masks = (rng.random((8, 85)) > 0.6).astype(np.int8)
    masks[:, 84] = 1

    def agents():
        return [
            PolicyAgent(model, seed=1, deterministic=False),
            PolicyAgent(model),
            PolicyAgent(model, seed=2, deterministic=False),
        ]

    a, greedy, b = agents()
    assert isinstance(a, Agent) and a.batch_key == greedy.batch_key
    order = [a, greedy, b, a, greedy, b, a, b]
    together = act_rows(order, obs, masks)  # one act_batch call with instances: every row on one forward pass
    assert masks[np.arange(8), together].all()
    probs = greedy.probs_batch(obs, masks)
    assert together[[1, 4]].tolist() == probs[[1, 4]].argmax(1).tolist()  # greedy rows: the most likely action
    # Each sampling instance draws its rows with its own generator, as if asked alone.
    a2, _, b2 = agents()
    np.testing.assert_array_equal(together[[0, 3, 6]], a2.act_batch(obs[[0, 3, 6]], masks[[0, 3, 6]]))
    np.testing.assert_array_equal(together[[2, 5, 7]], b2.act_batch(obs[[2, 5, 7]], masks[[2, 5, 7]]))


# ---------------------------------------------------------------------- runs: resume, warm start, budget, bookkeeping

#: A tiny but complete run: rollouts of two hands, every opponent kind, a pool, an
#: evaluation every other iteration.
TINY = tiny(
    episode="hand",
    update_epochs=2,
    eval_every=2,
    eval_games=4,
    opp_self=0.4,
    opp_pool=0.3,
    opp_baselines=0.3,
    baselines="random,heuristic",
    snapshot_every=1,
    pool_size=2,
)


def _checkpoint_state(path):
    model, payload = load_checkpoint(path)
    return model.state_dict(), payload


def _assert_same_state(a, b):
    (wa, pa), (wb, pb) = a, b
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    for k in ("iteration", "decisions", "next_snapshot_id", "history"):
        assert pa[k] == pb[k], k
    best_a, best_b = json.loads(pa["best"]), json.loads(pb["best"])  # equal but for the run's folder
    assert (best_a["score"], best_a.get("iteration")) == (best_b["score"], best_b.get("iteration"))
    assert pa["pool"].keys() == pb["pool"].keys()
    for sid in pa["pool"]:
        assert all(torch.equal(pa["pool"][sid][k], pb["pool"][sid][k]) for k in pa["pool"][sid])
    oa, ob = pa["optimizer"]["state"], pb["optimizer"]["state"]
    assert oa.keys() == ob.keys()
    assert all(torch.equal(oa[i][k], ob[i][k]) for i in oa for k in oa[i])
    assert torch.equal(pa["update_generator"], pb["update_generator"])


#: Six iterations or so (about 90 decisions each), a warm-start one first.
TOTAL = 500


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """The tiny run of TOTAL decisions, uninterrupted, its args and the (checkpoint file,
    games, seed) of every evaluation it played."""
    from barbu_env.evaluation import tournament

    calls, evaluate = [], tournament.evaluate

    def recording(specs, games, seed, **kw):
        calls.append((Path(str(specs[0])).name, games, seed))
        return evaluate(specs, games=games, seed=seed, **kw)

    args = config.Args(
        run_dir=str(tmp_path_factory.mktemp("runs")), exp_name="whole", total_decisions=TOTAL, bc_iterations=1, **TINY
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tournament, "evaluate", recording)
        summary = train(args)
    return args, summary, calls


def test_a_finished_run_leaves_its_checkpoints_curve_log_and_summary(whole_run):
    _, summary, _ = whole_run
    run = Path(summary["run"])
    assert summary["iterations"] >= 4 and summary["decisions"] >= TOTAL
    assert summary["timing"]["decisions"] == summary["decisions"] and summary["timing"]["collect_seconds"] > 0
    assert (run / "learning_curve.png").exists() and (run / "config.yaml").exists()
    assert list((run / "tb").glob("events.out.tfevents.*"))
    assert math.isfinite(json.loads((run / "summary.json").read_text())["final"]["random"]["mean"])
    _, payload = load_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == summary["iterations"] and len(payload["pool"]) == 2 and "optimizer" in payload


@pytest.mark.slow  # three training runs
def test_a_run_interrupted_and_resumed_ends_exactly_as_the_uninterrupted_run(whole_run, tmp_path, monkeypatch):
    _, whole, _ = whole_run
    # The same run, Ctrl-C in its third iteration's update, the weights already stepped: the
    # checkpoint holds the first two iterations, not the half-done third.
    update, calls = ppo.ppo_update, []

    def interrupted(*a):
        calls.append(update(*a))
        if len(calls) == 2:  # iteration 1 imitates; iterations 2 and 3 update by PPO
            raise KeyboardInterrupt
        return calls[-1]

    monkeypatch.setattr(ppo, "ppo_update", interrupted)
    args = config.Args(run_dir=str(tmp_path), exp_name="cut", total_decisions=TOTAL, bc_iterations=1, **TINY)
    with pytest.raises(TrainingInterrupted, match="iteration 2 saved") as stopped:
        train(args)
    latest = stopped.value.path
    assert load_checkpoint(latest)[1]["iteration"] == 2
    monkeypatch.setattr(ppo, "ppo_update", update)
    resumed = train(dataclasses.replace(args, resume=str(latest)))

    run_whole, run_cut = Path(whole["run"]) / "checkpoints", Path(resumed["run"]) / "checkpoints"
    for name in ("latest.pt", "best.pt"):  # weights, optimizer, pool, counters, curve, best score: identical
        _assert_same_state(_checkpoint_state(run_whole / name), _checkpoint_state(run_cut / name))
    assert resumed["history"] == whole["history"] and len(whole["history"]) == whole["iterations"] // 2 + 1
    assert resumed["final"] == whole["final"]


def test_a_run_initialised_from_a_checkpoint_starts_from_its_weights_with_fresh_counters(tmp_path):
    trainer = Trainer(config.Args(run_dir=str(tmp_path), exp_name="a", **TINY))
    trainer.iterate()
    path = trainer.checkpoint(tmp_path / "a.pt")
    started = Trainer(config.Args(run_dir=str(tmp_path), exp_name="b", seed=9, init=str(path), **TINY))
    assert all(torch.equal(a, b) for a, b in zip(started.model.parameters(), trainer.model.parameters(), strict=True))
    assert (started.iteration, started.decisions, started.pool) == (0, 0, {})
    assert not started.optimizer.state  # a fresh optimizer
    fresh = Trainer(config.Args(run_dir=str(tmp_path), exp_name="c", seed=9, **TINY))
    assert not all(torch.equal(a, b) for a, b in zip(fresh.model.parameters(), trainer.model.parameters(), strict=True))
    with pytest.raises(ValueError, match="not the one this config builds"):
        Trainer(config.Args(run_dir=str(tmp_path), exp_name="d", init=str(path), **(TINY | {"hidden": 64})))


def test_the_shipped_policy_starts_a_run_by_name(tmp_path):
    started = Trainer(config.Args(run_dir=str(tmp_path), exp_name="p", init="ppo", progress=False))
    shipped, _ = load_checkpoint(checkpoint_path("ppo"))
    assert all(torch.equal(a, b) for a, b in zip(started.model.parameters(), shipped.parameters(), strict=True))


def test_a_checkpoint_holds_the_state_of_the_iteration_it_was_taken_after(tmp_path):
    trainer = Trainer(config.Args(run_dir=str(tmp_path), exp_name="c", **TINY))
    trainer.iterate()
    path = trainer.checkpoint(tmp_path / "c.pt")
    again = Trainer(config.Args(run_dir=str(tmp_path), exp_name="c", resume=str(path), **TINY))
    assert (again.iteration, again.decisions) == (1, trainer.decisions) and again.pool.keys() == trainer.pool.keys()
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), trainer.model.parameters(), strict=True))
    assert torch.equal(again.update_gen.get_state(), trainer.update_gen.get_state())
    # both carry on alike: same rollout, same update
    for t in (trainer, again):
        t.iterate()
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), trainer.model.parameters(), strict=True))


def test_the_first_ppo_minibatch_has_ratio_one_and_the_stored_values_are_the_models(tmp_path):
    args = config.Args(num_games=2, minibatch_size=256, update_epochs=1, hidden=32, card_embed=4, torch_threads=1)
    torch.manual_seed(7)
    model = BarbuActorCritic(config.model_config(args))
    model.eval()
    r = rollout.Collector(args, load_rules("standard")).collect(
        model, {}, np.random.default_rng(7), torch.Generator().manual_seed(7)
    )
    with torch.no_grad():
        logits, values = model(torch.from_numpy(r.obs))
        logprobs = MaskedCategorical(logits, torch.from_numpy(r.masks)).log_prob(torch.from_numpy(r.actions))
    np.testing.assert_allclose(r.values, values.numpy(), atol=1e-5)
    np.testing.assert_allclose(r.logprobs, logprobs.numpy(), atol=1e-5)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    stats = ppo.ppo_update(model, optimizer, ppo.as_tensors(r, False), args, torch.Generator().manual_seed(0))
    assert stats["losses/first_ratio_error"] < 1e-4


def test_best_pt_is_the_best_periodic_evaluation_and_the_final_one_plays_other_deals(whole_run):
    from barbu_env.evaluation import tournament

    args, summary, calls = whole_run
    history = summary["history"]
    scores = [h["eval"]["random"]["mean"] for h in history]
    best = int(np.argmax(scores))  # the first of equal bests
    _, payload = load_checkpoint(Path(summary["best_checkpoint"]))
    assert Path(summary["best_checkpoint"]).name == "best.pt" and payload["iteration"] == history[best]["iteration"]
    periodic = [c for c in calls if c[2] == args.eval_seed]
    final = [c for c in calls if c[2] == args.final_eval_seed]
    assert len(periodic) == len(history) and final == [("best.pt", args.final_eval_games, args.final_eval_seed)]
    again = evaluate_checkpoint(Path(summary["best_checkpoint"]), args, args.eval_games)
    assert again["random"]["mean"] == scores[best] and len(set(scores)) > 1

    def deals(seed, games):
        return {json.dumps(tournament.deal_set(seed, i)[1]) for i in range(-(-games // 4))}

    assert not deals(args.eval_seed, args.eval_games) & deals(args.final_eval_seed, args.final_eval_games)


def test_the_warm_start_imitates_the_teacher_at_its_own_learning_rate_then_ppo_anneals(tmp_path):
    args = config.Args(
        run_dir=str(tmp_path),
        exp_name="bc",
        **(TINY | dict(num_games=24, bc_iterations=2, bc_epochs=12, bc_learning_rate=3e-3, learning_rate=1e-4)),
        total_decisions=10**6,
    )
    trainer = Trainer(args)
    # the teacher's own games, held out: how often the greedy policy picks the teacher's action
    held_out = trainer.collector.collect(
        trainer.model, {}, np.random.default_rng(99), torch.Generator().manual_seed(0), teacher="heuristic"
    )

    def agreement():
        with torch.no_grad():
            logits, _ = trainer.model(torch.from_numpy(held_out.obs))
            picks = MaskedCategorical(logits, torch.from_numpy(held_out.masks)).mode().numpy()
        return float((picks == held_out.actions).mean())

    before = agreement()
    for _ in range(2):
        trainer.iterate()
        assert trainer.optimizer.param_groups[0]["lr"] == 3e-3 and trainer.history == []
        assert (trainer.collector.buf["logprobs"][:10] == 0).all()  # the teacher played: nothing sampled
    after = agreement()
    assert after > before + 0.15, (before, after)  # measured: 0.33 -> 0.54
    done = trainer.decisions
    trainer.iterate()  # PPO: the rate annealed from where the run stands
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4 * (1 - done / 10**6))


@pytest.mark.slow  # a timed run
def test_a_time_budget_stops_the_run_and_anneals_the_rate_by_time(tmp_path):
    args = config.Args(
        run_dir=str(tmp_path),
        exp_name="t",
        **(TINY | dict(eval_every=0)),
        total_decisions=100_000,  # about 1,000 iterations: far more than the budget allows
        time_budget_minutes=0.03,
    )
    trainer = Trainer(args)
    trainer.minutes_before, trainer.iteration = 0.015, 1  # half the budget spent in an earlier session
    trainer.set_learning_rate()
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.5 * args.learning_rate, rel=0.1)
    trainer.writer.close()  # the next run of the same name clears this one's log folder
    trainer = Trainer(args)
    summary = trainer.run()
    assert 1 <= summary["iterations"] and summary["decisions"] < 100_000  # stopped by the budget, not the decisions
    assert trainer.minutes() >= 0.03


def test_a_rollout_whose_last_minibatch_is_one_row_updates_to_finite_losses():
    args = config.Args(**tiny(minibatch_size=8, update_epochs=1))
    torch.manual_seed(0)
    model = BarbuActorCritic(config.model_config(args))
    n = 17  # two minibatches of 8, then one of a single row
    b = {
        "obs": torch.rand(n, OBS_DIM).round(),
        "masks": torch.ones(n, 85, dtype=torch.bool),
        "actions": torch.randint(0, 85, (n,)),
        "logprobs": torch.full((n,), -math.log(85)),
        "values": torch.zeros(n),
        "advantages": torch.randn(n),
        "returns": torch.randn(n),
        "states": None,
    }
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    stats = ppo.ppo_update(model, optimizer, b, args, torch.Generator().manual_seed(0))
    assert all(math.isfinite(stats[k]) for k in ("losses/policy_loss", "losses/value_loss"))
