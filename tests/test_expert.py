"""Expert iteration (``barbu_training.expert``): which decisions are labelled, the soft targets,
labels collected from real games, and a fit from saved labels that moves the network
toward the targets and saves a playable checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_pimc import random_positions  # noqa: E402

from barbu_env.agents import make_agent  # noqa: E402
from barbu_env.agents.pretrained import checkpoint_path  # noqa: E402
from barbu_env.game.constants import Contract, Phase  # noqa: E402
from barbu_env.game.observation import decode  # noqa: E402
from barbu_env.game.rules import load_rules  # noqa: E402
from barbu_models.policy import MaskedCategorical, load_checkpoint  # noqa: E402
from barbu_training.config import ConfigError  # noqa: E402
from barbu_training.expert import (  # noqa: E402
    ExpertArgs,
    always_labelled,
    check_games,
    collect,
    describe,
    held_out,
    main,
    measure,
    run,
    soft_targets,
)

RULES = load_rules("standard")


@pytest.fixture(scope="module")
def positions():
    obs, masks = random_positions(RULES, games=3, every=7, seed=11)
    choice = masks.sum(axis=1) > 1
    return obs[choice], masks[choice].astype(bool)


def test_declarer_choices_doubles_and_declarer_trumps_play_are_always_labelled(positions):
    obs, _masks = positions
    d = decode(obs)
    phase = d["phase"].argmax(axis=1)
    contract = d["contract"].argmax(axis=1)
    declaring = d["declarer"][:, 0] > 0.5
    labelled = always_labelled(obs)
    choices = np.isin(phase, [Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK, Phase.DOUBLE])
    trumps_declarer = (phase == Phase.TRICKS) & (contract == Contract.TRUMPS) & declaring
    other_play = (phase == Phase.TRICKS) & ~trumps_declarer
    assert choices.any() and other_play.any()
    assert labelled[choices].all()
    assert labelled[trumps_declarer].all()
    assert not labelled[other_play].any()  # the defenders' cards, and every card outside Trumps


def test_soft_targets_keep_the_policy_where_the_search_is_indifferent_and_favour_better_actions():
    probs = np.zeros((2, 85), np.float32)
    probs[:, [3, 7, 9]] = [0.6, 0.3, 0.1]
    masks = probs > 0
    values = np.full((2, 85), np.nan, np.float32)
    values[0, [3, 7, 9]] = [5.0, 5.0, 5.0]
    values[1, [3, 7, 9]] = [0.0, 20.0, 0.0]
    t = soft_targets(probs, values, masks, temperature=4.0)
    assert np.allclose(t.sum(axis=1), 1.0)
    assert (t[~masks] == 0).all()
    assert np.allclose(t[0], probs[0], atol=1e-6)  # equal values: the policy's own odds
    assert t[1, 7] > 0.9 and np.isclose(t[1, 3] / t[1, 9], 6.0)  # +20 at τ=4 is a factor e^5
    cold = soft_targets(probs, values, masks, temperature=1e6)
    assert np.allclose(cold[1], probs[1], atol=1e-4)  # a huge temperature leaves the policy


def test_collected_labels_are_the_search_values_of_exactly_the_legal_actions():
    args = ExpertArgs(student="ppo-finetuned", searcher="pimc", worlds=2, games=1, other_share=0.0, games_per_batch=1)
    data = collect((str(checkpoint_path("ppo-finetuned")), args, 1, 7))
    n = len(data["obs"])
    assert n > 24  # at least the 24 declarations with a choice, with doubles and the declarer's Trumps cards
    assert always_labelled(data["obs"]).all()  # other_share 0: only the kinds always labelled
    assert (np.isfinite(data["values"]) == data["masks"]).all()
    assert (data["masks"].sum(axis=1) > 1).all()  # forced decisions are never asked
    assert np.allclose(data["probs"].sum(axis=1), 1.0, atol=1e-5)
    assert (data["probs"][~data["masks"]] == 0).all()
    phases = decode(data["obs"])["phase"].argmax(axis=1)
    assert (phases == Phase.DECLARE).sum() == 24  # each player's seventh contract is forced
    assert (data["game"] == 0).all()


@pytest.mark.slow  # a search labelling and a fit
def test_a_fit_from_saved_labels_moves_the_network_toward_the_targets(positions, tmp_path):
    obs, masks = positions
    model, _ = load_checkpoint(checkpoint_path("ppo-finetuned"))
    with torch.no_grad():
        logits, value = model(torch.as_tensor(obs))
        probs = MaskedCategorical(logits, torch.as_tensor(masks)).probs.numpy()
    rng = np.random.default_rng(0)
    values = np.where(masks, rng.normal(0.0, 30.0, masks.shape), np.nan).astype(np.float32)
    # every decision twice: once to fit, once held out, so the held-out KL must fall
    labels = {
        "obs": np.concatenate([obs, obs]),
        "masks": np.concatenate([masks, masks]),
        "values": np.concatenate([values, values]),
        "probs": np.concatenate([probs, probs]),
        "value": np.concatenate([value.numpy(), value.numpy()]),
        "holdout": np.repeat([False, True], len(obs)),
    }
    np.savez_compressed(tmp_path / "labels.npz", **labels)
    args = ExpertArgs(
        labels=str(tmp_path / "labels.npz"), epochs=3, learning_rate=1e-3, minibatch_size=64, out=str(tmp_path / "out")
    )
    summary = run(args)
    before, after = summary["holdout_before"]["all"], summary["holdout_after"]["all"]
    assert summary["labels"] == 2 * len(obs) and summary["holdout"] == len(obs)
    assert after["kl"] < 0.7 * before["kl"]
    assert after["agreement"] > before["agreement"]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["holdout_after"] == summary["holdout_after"]
    # the saved network is what was measured, and it plays as an agent
    saved, extra = load_checkpoint(tmp_path / "out" / "expert.pt")
    held = {k: v[len(obs) :] for k, v in labels.items()} | {
        "target": soft_targets(probs, values, masks, args.temperature)
    }
    assert measure(saved, held)["all"] == after
    assert extra["expert_config"]["labels"] == args.labels
    agent = make_agent(str(tmp_path / "out" / "expert.pt"))
    assert masks[np.arange(len(obs)), agent.act_batch(obs, masks)].all()


@pytest.mark.slow  # a search labelling and a fit
def test_a_student_with_a_privileged_critic_is_labelled_and_fitted_its_critic_left_as_it_was(tmp_path):
    student = str(checkpoint_path("ppo-belief"))  # a privileged critic: it cannot value a position from the observation
    args = ExpertArgs(student=student, searcher="pimc", worlds=2, games=1, other_share=0.0, games_per_batch=1)
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        data = collect((student, args, 1, 5))  # as one worker does, in this process
        assert torch.get_num_threads() == 3  # the fit after it keeps the run's torch_threads
    finally:
        torch.set_num_threads(before)
    assert len(data["obs"]) > 24 and (data["value"] == 0).all()
    data["holdout"] = np.arange(len(data["obs"])) % 2 == 1
    np.savez_compressed(tmp_path / "labels.npz", **data)
    summary = run(ExpertArgs(student=student, labels=str(tmp_path / "labels.npz"), epochs=2, out=str(tmp_path / "out")))
    assert summary["holdout_after"]["all"]["kl"] <= summary["holdout_before"]["all"]["kl"]
    before, _ = load_checkpoint(student)
    after, _ = load_checkpoint(tmp_path / "out" / "expert.pt")
    assert after.config == before.config
    for name, weights in before.state_dict().items():
        if name.startswith(("critic", "critic_cards")):
            assert torch.equal(after.state_dict()[name], weights), name
    assert not torch.equal(after.policy_head.weight, before.policy_head.weight)


def test_a_holdout_of_zero_holds_no_game_out_and_fits_on_every_label(positions, tmp_path):
    assert [held_out(10, 0), held_out(10, 0.01), held_out(10, 0.25)] == [0, 1, 2]
    check_games(ExpertArgs(games=1, workers=1, holdout=0))  # one game, all of it to fit on
    with pytest.raises(ConfigError, match="no game to fit on"):
        check_games(ExpertArgs(games=1, workers=1, holdout=0.1))
    obs, masks = positions
    values = np.where(masks, 1.0, np.nan).astype(np.float32)
    probs = masks / masks.sum(axis=1, keepdims=True)
    labels = {"obs": obs, "masks": masks, "values": values, "probs": probs.astype(np.float32)}
    labels |= {"value": np.zeros(len(obs), np.float32), "holdout": np.zeros(len(obs), bool)}
    np.savez_compressed(tmp_path / "labels.npz", **labels)
    student = str(checkpoint_path("ppo-finetuned"))
    summary = run(ExpertArgs(student=student, labels=str(tmp_path / "labels.npz"), epochs=1, out=str(tmp_path / "o")))
    assert summary["train"] == len(obs) and summary["holdout"] == 0
    assert summary["holdout_before"] == summary["holdout_after"] == {}
    assert describe(summary).endswith("no decision held out")


@pytest.mark.slow  # two fits
def test_saved_labels_are_held_out_by_the_holdout_asked_now(positions, tmp_path):
    obs, masks = positions  # as two workers' labels: worker 0 plays 4 games, worker 1 plays 2
    n = len(obs)
    worker = (np.arange(n) >= n // 2).astype(np.int32)
    game = np.where(worker == 0, np.arange(n) % 4, np.arange(n) % 2)
    values = np.where(masks, 1.0, np.nan).astype(np.float32)
    labels = {
        "obs": obs,
        "masks": masks,
        "values": values,
        "probs": (masks / masks.sum(1, keepdims=True)).astype(np.float32),
    }
    labels |= {"value": np.zeros(n, np.float32), "game": game, "worker": worker, "worker_games": np.array([4, 2])}
    labels["holdout"] = np.ones(n, bool)  # what the earlier run held out: ignored, the games say
    np.savez_compressed(tmp_path / "labels.npz", **labels)
    student = str(checkpoint_path("ppo-finetuned"))

    def fit(holdout: float) -> dict:
        out = str(tmp_path / f"o{holdout}")
        return run(ExpertArgs(student=student, labels=str(tmp_path / "labels.npz"), epochs=1, holdout=holdout, out=out))

    assert fit(0)["holdout"] == 0
    expected = ((worker == 0) & (game == 3)) | ((worker == 1) & (game == 1))  # each worker's last game
    assert fit(0.25)["holdout"] == expected.sum()
    with pytest.raises(ConfigError, match="leaves no label to fit on"):
        fit(1)
    assert not (tmp_path / "o1").exists()  # refused before anything is written


def test_labels_numpy_cannot_read_are_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "junk.npz").write_text("not a zip")
    np.save(tmp_path / "one.npy", np.zeros(3))
    for labels in ("junk.npz", "none.npz", "one.npy"):
        with pytest.raises(SystemExit) as e:
            main(["--labels", str(tmp_path / labels), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "cannot read" in err, err
    assert not (tmp_path / "o").exists()
