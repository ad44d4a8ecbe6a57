"""Training: the masked distribution, per-seat GAE and reward bookkeeping, trained policies
as agents, checkpoints, configs, and a tiny end-to-end run that trains, checkpoints,
resumes and evaluates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from barbu_env.observation import OBS_DIM, PRIVILEGED_DIM
from barbu_env.rules import load_rules
from models.policy import BarbuActorCritic, MaskedCategorical, PolicyConfig, load_checkpoint, save_checkpoint
from training import config, ppo, rollout
from training.policy_agent import PolicyAgent, load_policy_agent

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


@pytest.fixture(scope="module", params=["baselines", "pool"])
def opponent_rollout(request):
    """A rollout where one or two seats learn against random players, or against a pool
    snapshot (a sampling PolicyAgent), gamma = lambda = 1."""
    against_pool = request.param == "pool"
    args = ppo.Args(
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
    model = BarbuActorCritic(ppo.model_config(args))
    pool = {3: BarbuActorCritic(ppo.model_config(args)).state_dict()} if against_pool else {}
    rules, rng, gen = load_rules("standard"), np.random.default_rng(0), torch.Generator().manual_seed(0)
    r = rollout.Collector(args, rules).collect(model, pool, rng, gen)
    assert set(r.kind_scores) == {"pool" if against_pool else "agent"}
    return args, r


def test_each_seat_is_rewarded_with_its_own_scores_only(opponent_rollout):
    args, r = opponent_rollout
    assert r.learning.sum(1).min() >= 1 and r.learning.sum(1).max() <= 2  # one or two learning seats
    assert not r.learning.all(1).any()
    np.testing.assert_allclose(r.advantages, r.returns - r.values, atol=1e-4)
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


def test_forced_decisions_are_played_without_becoming_transitions(opponent_rollout):
    args, r = opponent_rollout
    assert args.skip_forced and (r.masks.sum(1) > 1).all()


@pytest.mark.parametrize("skip_forced", [True, False])
def test_self_play_gives_every_seat_a_chain_from_its_first_decision_to_the_games_end(skip_forced):
    args = ppo.Args(
        num_games=3, opp_self=1.0, opp_pool=0.0, opp_baselines=0.0, gamma=1.0, gae_lambda=1.0, skip_forced=skip_forced
    )
    torch.manual_seed(1)
    model = BarbuActorCritic(ppo.model_config(args))
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
    args = ppo.Args(num_games=2, opp_self=1.0, opp_pool=0.0, opp_baselines=0.0)
    collector = rollout.Collector(args, load_rules("standard"), capacity=100)  # far less than a game
    model = BarbuActorCritic(ppo.model_config(args))
    r = collector.collect(model, {}, np.random.default_rng(3), torch.Generator().manual_seed(3))
    assert collector.capacity >= len(r.actions) > 100
    assert r.masks[np.arange(len(r.actions)), r.actions].all()
    assert set(np.unique(r.game_ids)) == {0, 1}


def test_pool_snapshots_play_as_sampling_policy_agents_and_leave_with_the_pool():
    args = ppo.Args(num_games=2)
    collector = rollout.Collector(args, load_rules("standard"), capacity=100)
    pool = {sid: BarbuActorCritic(ppo.model_config(args)).state_dict() for sid in (4, 7)}
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
    obs = np.random.default_rng(0).random((16, 924), dtype=np.float32)
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


def test_checkpoints_load_with_weights_only(tmp_path):
    path = tmp_path / "p.pt"
    save_checkpoint(path, BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4)))
    payload = torch.load(path, weights_only=True)
    assert set(payload) >= {"model_config", "state_dict"}


def test_training_configs_load_and_unknown_fields_are_errors(tmp_path):
    for path in sorted((ROOT / "configs" / "train").glob("*.yaml")):
        args = ppo.load_args(str(path))
        assert args.total_decisions > 0
    with pytest.raises(ValueError, match="no_such_field"):
        ppo.load_args(None, {"no_such_field": 1})
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rate: 0.001\nlerning_rate: 0.1\n")
    with pytest.raises(ValueError, match="lerning_rate"):
        ppo.load_args(str(bad))


def test_retired_rollout_fields_load_with_a_warning_and_the_per_game_engine_is_an_error(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text("rollout_engine: vector\ngames_per_worker: 16\nseed: 4\n")
    with pytest.warns(FutureWarning, match="'games_per_worker', 'rollout_engine'"):
        args = ppo.load_args(str(old))
    assert args.seed == 4 and not hasattr(args, "rollout_engine")
    with pytest.raises(ValueError, match="rollout_engine: 'aec' is no longer available"):
        ppo.load_args(None, {"rollout_engine": "aec"})


def test_command_line_flags_override_the_config():
    ns = vars(
        ppo.build_parser().parse_args(
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
    args = ppo.load_args(ns.pop("config"), ns)
    assert (args.seed, args.anneal_lr, args.ent_coef, args.exp_name) == (7, False, 0.02, "quick")


def test_the_help_lists_every_flag(capsys):
    with pytest.raises(SystemExit):
        ppo.build_parser().parse_args(["--help"])
    assert "about 23% of decisions are forced" in " ".join(capsys.readouterr().out.split())


def test_every_argument_has_a_docstring():
    docs = config.field_docs(ppo.Args)
    assert set(docs) == {f for f in ppo.Args.__dataclass_fields__}
    assert all(len(d) > 5 for d in docs.values())


# ---------------------------------------------------------------------- a tiny run


def test_tiny_run_trains_checkpoints_resumes_and_evaluates(tmp_path):
    common = dict(
        run_dir=str(tmp_path),
        exp_name="tiny",
        num_workers=1,
        num_games=2,
        minibatch_size=512,
        update_epochs=1,
        hidden=32,
        card_embed=4,
        eval_every=1,
        eval_games=4,
        final_eval_games=4,
        eval_opponents="random",
        snapshot_every=1,
        progress=False,
        torch_threads=1,
    )
    summary = ppo.train(ppo.Args(total_decisions=5000, **common))
    run = Path(summary["run"])
    assert summary["iterations"] == 2 and summary["decisions"] >= 5000
    assert summary["timing"]["decisions"] == summary["decisions"] and summary["timing"]["collect_seconds"] > 0
    for name in ("latest.pt", "best.pt"):
        assert (run / "checkpoints" / name).exists()
    assert (run / "learning_curve.png").exists() and (run / "config.yaml").exists()
    assert list((run / "tb").glob("events.out.tfevents.*"))
    saved = json.loads((run / "summary.json").read_text())
    assert math.isfinite(saved["final"]["random"]["mean"])

    _, payload = load_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 2 and len(payload["pool"]) == 2 and "optimizer" in payload
    resumed = ppo.train(
        ppo.Args(total_decisions=summary["decisions"] + 3000, resume=str(run / "checkpoints" / "latest.pt"), **common)
    )
    assert resumed["iterations"] == 3 and resumed["decisions"] > summary["decisions"]
    assert len(resumed["history"]) > len(summary["history"])

    from barbu_env.cli import main

    out = tmp_path / "eval.json"
    assert (
        main(
            [
                "eval",
                "--agents",
                f"{resumed['best_checkpoint']},random,random,random",
                "--games",
                "4",
                "--workers",
                "1",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["entries"][0]["label"].startswith("best")


def test_privileged_critic_trains_and_the_policy_never_reads_the_hidden_hands(tmp_path):
    args = ppo.Args(
        run_dir=str(tmp_path),
        exp_name="cc",
        central_critic=True,
        num_workers=1,
        num_games=2,
        minibatch_size=512,
        update_epochs=1,
        hidden=32,
        card_embed=4,
        eval_every=0,
        final_eval_games=4,
        eval_opponents="random",
        progress=False,
        torch_threads=1,
        total_decisions=3000,
    )
    summary = ppo.train(args)
    model, _ = load_checkpoint(summary["best_checkpoint"])
    assert model.config.state_dim == PRIVILEGED_DIM
    obs = torch.rand(5, OBS_DIM)
    hidden = (torch.rand(2, 5, PRIVILEGED_DIM - OBS_DIM) > 0.7).float()
    logits_a, value_a = model(obs, torch.cat([obs, hidden[0]], dim=1))
    logits_b, value_b = model(obs, torch.cat([obs, hidden[1]], dim=1))
    assert torch.equal(logits_a, logits_b)  # acting depends on the observation alone
    assert not torch.equal(value_a, value_b)  # the critic does read the hidden hands


def test_checkpoint_agents_play_greedily_unless_asked_to_sample(tmp_path):
    torch.manual_seed(4)
    path = tmp_path / "p.pt"
    save_checkpoint(path, BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4)))
    obs = np.random.default_rng(2).random(924, dtype=np.float32)
    mask = np.zeros(85, dtype=np.int8)
    mask[[3, 10, 40, 84]] = 1
    greedy = load_policy_agent(path, seed=1)
    probs = greedy.probs_batch(obs[None], mask[None])[0]
    assert greedy.act({"observation": obs, "action_mask": mask}) == int(np.argmax(probs))
    sampler = load_policy_agent(path, seed=1, deterministic=False)
    drawn = {sampler.act({"observation": obs, "action_mask": mask}) for _ in range(200)}
    assert drawn <= {3, 10, 40, 84} and len(drawn) > 1


def test_policy_agents_on_one_network_are_asked_together_each_with_its_own_generator(tmp_path):
    from barbu_env.agents import BatchAgent, GroupAgent, act_rows

    torch.manual_seed(5)
    model = BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4))
    rng = np.random.default_rng(6)
    obs = rng.random((8, 924), dtype=np.float32)
    masks = (rng.random((8, 85)) > 0.6).astype(np.int8)
    masks[:, 84] = 1

    def agents():
        return [
            PolicyAgent(model, seed=1, deterministic=False),
            PolicyAgent(model),
            PolicyAgent(model, seed=2, deterministic=False),
        ]

    a, greedy, b = agents()
    assert isinstance(a, BatchAgent) and isinstance(a, GroupAgent) and a.batch_key == greedy.batch_key
    order = [a, greedy, b, a, greedy, b, a, b]
    together = act_rows(order, obs, masks)  # one act_group call: every row on one forward pass
    assert masks[np.arange(8), together].all()
    probs = greedy.probs_batch(obs, masks)
    assert together[[1, 4]].tolist() == probs[[1, 4]].argmax(1).tolist()  # greedy rows: the most likely action
    # Each sampling instance draws its rows with its own generator, as if asked alone.
    a2, _, b2 = agents()
    np.testing.assert_array_equal(together[[0, 3, 6]], a2.act_batch(obs[[0, 3, 6]], masks[[0, 3, 6]]))
    np.testing.assert_array_equal(together[[2, 5, 7]], b2.act_batch(obs[[2, 5, 7]], masks[[2, 5, 7]]))


def test_training_benchmark_measures_the_trainer(tmp_path, capsys):
    from training import bench_training

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(
        "num_games: 2\nhidden: 32\ncard_embed: 4\nminibatch_size: 512\nupdate_epochs: 1\n"
        "torch_threads: 1\nnum_workers: 1\n"
    )
    out = tmp_path / "bench.json"
    assert bench_training.main(["--config", str(cfg), "--decisions", "2000", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["decisions"] >= 2000 and row["iterations"] >= 1
    assert row["rollout_dps"] > row["overall_dps"] > 0
    assert "rollouts dec/s" in capsys.readouterr().out
