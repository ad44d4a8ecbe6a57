"""Devices: resolving a device setting, training on an explicit device, checkpoints that
load anywhere, trained policies as agents on a device, ``barbu eval --device``.

These run on the CPU. Where a test needs a GPU to be present (``auto`` picking CUDA,
``cuda:N`` checked against the count), it says so to torch through pytest's monkeypatch;
the training and acting code paths are the same on every device.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_runs import tiny

from barbu_env.agents import make_agent
from barbu_env.game.observation import OBS_DIM
from barbu_models import device as device_module
from barbu_models.device import available_devices, resolve_device
from barbu_models.policy import BarbuActorCritic, PolicyConfig, load_checkpoint, save_checkpoint
from barbu_training.config import Args
from barbu_training.run import Trainer
from barbu_training.train import main

TINY = tiny(episode="hand", snapshot_every=1)  # rollouts of two hands, a pool snapshot each iteration


@pytest.fixture
def no_gpu(monkeypatch):
    """A machine without CUDA or MPS, whatever this one has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(device_module, "_mps_available", lambda: False)


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine with two CUDA GPUs, as torch reports them (nothing is put on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(device_module, "_mps_available", lambda: False)


@pytest.fixture
def policy_file(tmp_path):
    torch.manual_seed(3)
    path = tmp_path / "p.pt"
    save_checkpoint(path, BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4)))
    return path


# ---------------------------------------------------------------------- resolving a device


def test_cpu_is_the_cpu_and_auto_is_the_cpu_without_a_gpu(no_gpu):
    assert resolve_device("cpu") == resolve_device(" CPU ") == resolve_device("cpu:0") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")
    assert available_devices() == ["cpu"]


def test_auto_picks_cuda_when_a_gpu_is_present_then_mps(two_gpus, monkeypatch):
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert available_devices() == ["cpu", "cuda", "cuda:0", "cuda:1"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device_module, "_mps_available", lambda: True)
    assert resolve_device("auto") == torch.device("mps")


@pytest.mark.parametrize("name", ["cuda", "tpu"])
def test_a_device_that_is_not_there_is_an_error_naming_what_is(no_gpu, name):
    with pytest.raises(ValueError, match=rf"device '{name}': a device is auto, .* one this machine has \(cpu\)"):
        resolve_device(name)


# ---------------------------------------------------------------------- training on a device


def test_a_run_on_an_explicit_cpu_device_trains_saves_cpu_tensors_and_resumes(tmp_path):
    args = Args(run_dir=str(tmp_path), exp_name="cpu", device="cpu", total_decisions=50, **TINY)
    trainer = Trainer(args)
    assert trainer.device == torch.device("cpu")
    summary = trainer.run()
    assert summary["iterations"] == 1 and summary["decisions"] >= 50
    latest = tmp_path / "cpu" / "checkpoints" / "latest.pt"
    payload = torch.load(latest, weights_only=True)  # no map_location: each tensor where it was saved
    saved = [*payload["state_dict"].values(), *payload["pool"]["0"].values()]
    saved += [t for s in payload["optimizer"]["state"].values() for t in s.values()]
    assert saved and all(t.device == torch.device("cpu") for t in saved)
    # resumed onto the run's device ("auto" here), it carries on from where it stood
    again = Trainer(Args(run_dir=str(tmp_path), exp_name="cpu", resume=str(latest), **TINY))
    assert again.decisions == summary["decisions"]
    assert all(p.device == again.device for p in again.model.parameters())
    assert all(t.device == again.device for s in again.optimizer.state.values() for t in s.values() if t.dim())
    again.iterate()
    assert again.iteration == 2


def test_a_training_device_that_is_not_there_fails_before_the_run_folder_is_made(tmp_path, no_gpu):
    args = Args(run_dir=str(tmp_path), exp_name="gpu", device="cuda:3", **TINY)
    with pytest.raises(ValueError, match="one this machine has"):
        Trainer(args)
    assert not (tmp_path / "gpu").exists()
    assert main(["--run-dir", str(tmp_path), "--exp-name", "gpu", "--device", "tpu"]) == 1


# ---------------------------------------------------------------------- policies as agents on a device


def test_a_checkpoint_agent_takes_a_device_as_a_keyword_or_in_its_spec(policy_file):
    obs = np.random.default_rng(2).random((6, OBS_DIM), dtype=np.float32)
    masks = np.zeros((6, 85), dtype=np.int8)
    masks[:, [3, 10, 40, 84]] = 1
    default = make_agent(str(policy_file), seed=1)
    by_keyword = make_agent(str(policy_file), seed=1, device="cpu")
    by_spec = make_agent(f"{policy_file}:device=cpu,deterministic=false", seed=1)
    assert by_keyword.device == by_spec.device == torch.device("cpu") and not by_spec.deterministic
    assert by_keyword.act_batch(obs, masks).tolist() == default.act_batch(obs, masks).tolist()
    assert set(by_spec.act_batch(obs, masks).tolist()) <= {3, 10, 40, 84}
    model, _ = load_checkpoint(policy_file, device="auto")
    assert next(model.parameters()).device == resolve_device("auto")


def test_pimc_places_a_checkpoint_rollout_policy_on_its_device(policy_file, no_gpu):
    pimc = make_agent(f"pimc:rollout={policy_file},device=cpu,worlds=2")
    assert pimc.rollout_agent.device == torch.device("cpu")
    assert make_agent("pimc:rollout=heuristic,device=cuda").rollout == "heuristic"  # no network: nothing to place
    with pytest.raises(ValueError, match="one this machine has"):
        make_agent(f"pimc:rollout={policy_file},device=cuda")


def test_eval_device_goes_to_the_agents_that_take_one_and_plays_in_this_process(policy_file):
    from barbu_env.agents import parse_agents
    from barbu_env.cli.agents import on_device

    def _on_device(texts, device, workers):
        placed, workers = on_device(parse_agents(",".join(texts)), device, workers)
        return [str(s) for s in placed], workers

    specs = [str(policy_file), "heuristic", f"pimc:rollout={policy_file}", f"{policy_file}:device=cpu"]
    assert _on_device(specs, "cpu", None) == (specs, None)  # the default: the specs as written
    placed, workers = _on_device(specs, "cuda:1", None)
    assert placed == [
        f"{policy_file}:device=cuda:1",
        "heuristic",
        f"pimc:rollout={policy_file},device=cuda:1",
        f"{policy_file}:device=cpu",  # what a spec says wins
    ]
    assert workers == 1
    assert _on_device(["heuristic", "random"], "cuda", 2) == (["heuristic", "random"], 2)  # no network to place
    with pytest.raises(ValueError, match="--device cuda plays in this process"):
        _on_device(specs, "cuda", 2)
