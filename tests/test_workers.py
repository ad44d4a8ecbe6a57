"""Rollout workers on Ray (``barbu_training.workers``, ``barbu train --workers N``): one worker
trains exactly as the in-process path, the packing is exact, overlapped rollouts resume
exactly, and a worker that dies ends the run with one line and its last whole iteration
kept. One local Ray (two CPUs) serves the module. The two-node cluster is
``tests/test_ray_cluster.py``'s."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import torch
from tiny_runs import tiny

from barbu_models.policy import load_checkpoint
from barbu_training.config import Args
from barbu_training.run import Trainer
from barbu_training.workers import WorkerLost, merge, pack, unpack, wire_bytes

ray = pytest.importorskip("ray")

#: A run small enough to start three times: a warm start, then games against the pool and two baselines.
RUN = tiny(
    num_games=3,
    bc_iterations=1,
    snapshot_every=1,
    opp_pool=0.3,
    opp_baselines=0.4,
    baselines="heuristic,random",
    total_decisions=10**9,
    final_eval_games=0,
)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def trainer(tmp_path, name: str, **changes) -> Trainer:
    return Trainer(Args(exp_name=name, run_dir=str(tmp_path), **(RUN | changes)))


def same_weights(a: Trainer, b: Trainer) -> bool:
    sa, sb = a.model.state_dict(), b.model.state_dict()
    return all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.slow  # Ray and a worker
def test_one_worker_plays_and_learns_exactly_what_the_in_process_path_does(tmp_path, local_ray):
    here, there = trainer(tmp_path, "here"), trainer(tmp_path, "there", workers=1)
    try:
        for _ in range(3):  # imitation, then PPO against itself, the pool and the baselines
            here.iterate()
            there.iterate()
        assert here.decisions == there.decisions > 0
        assert same_weights(here, there)
        assert there.workers.describe()["wire_bytes_per_transition"] < 400  # 4.6 KB in memory
    finally:
        there.close_workers()


@pytest.mark.slow  # two Ray workers
def test_a_packed_rollout_unpacks_to_the_same_arrays_and_merges_in_worker_order(tmp_path, local_ray):
    run = trainer(tmp_path, "packed", workers=2, central_critic=True)
    try:
        run.iteration = 2  # past the warm start: the policy's own transitions
        shares = [run.workers.ray.get(r) for r in run.workers.launch(run.weights(), {}, 2, "").refs]
    finally:
        run.close_workers()
    parts = [unpack(p) for p in shares]
    for p, r in zip(shares, parts):
        assert wire_bytes(p) < r.obs.nbytes / 10
        again = unpack(pack(r))
        for f in dataclasses.fields(r):
            x, y = getattr(r, f.name), getattr(again, f.name)
            assert np.array_equal(x, y) and getattr(x, "dtype", None) == getattr(y, "dtype", None), f.name
    assert not np.array_equal(parts[0].obs[:50], parts[1].obs[:50])  # two shares, two sets of games
    whole = merge(parts)
    assert whole.decisions == sum(r.decisions for r in parts)
    assert sorted(set(whole.game_ids.tolist())) == [0, 1, 2]  # 2 games, then 1, numbered across
    assert np.array_equal(whole.final_scores, np.concatenate([r.final_scores for r in parts]))


@pytest.mark.slow  # three runs of two workers: 25 s
def test_an_overlapped_run_resumed_from_a_checkpoint_trains_as_the_uninterrupted_one(tmp_path, local_ray):
    whole = trainer(tmp_path, "whole", workers=2, overlap=True)
    try:
        for _ in range(3):
            whole.iterate()
    finally:
        whole.close_workers()
    first = trainer(tmp_path, "cut", workers=2, overlap=True)
    try:
        for _ in range(2):
            first.iterate()
        path = first.checkpoint(first.ckpt_dir / "latest.pt")
    finally:
        first.close_workers()
    resumed = trainer(tmp_path, "cut", workers=2, overlap=True, resume=str(path))
    try:
        assert resumed.lagged is not None  # the weights the pending rollout was playing with
        resumed.iterate()
    finally:
        resumed.close_workers()
    assert resumed.iteration == whole.iteration == 3 and resumed.decisions == whole.decisions
    assert same_weights(resumed, whole)


@pytest.mark.slow  # a run on Ray workers
def test_a_worker_that_dies_ends_the_run_with_one_line_and_keeps_its_last_whole_iteration(tmp_path, local_ray):
    run = trainer(tmp_path, "lost", workers=2, total_decisions=10**6)
    run.iterate()
    run.boundary = run.state()
    best_before = sorted(p.name for p in run.ckpt_dir.iterdir())
    ray.kill(run.workers.actors[1])
    with pytest.raises(WorkerLost, match=r"rollout worker 2 of 2 on node \w+ died in iteration 2.*iteration 1 kept"):
        run.run()
    assert run.workers is None  # closed
    model, payload = load_checkpoint(run.ckpt_dir / "latest.pt")
    assert payload["iteration"] == 1
    assert set(best_before) <= {p.name for p in run.ckpt_dir.iterdir()}


def free_cpus(expected: float, seconds: float = 10.0) -> float:
    """The local Ray's free CPUs, once they are ``expected`` (actors just killed give theirs back late)."""
    deadline = time.monotonic() + seconds
    while (free := ray.available_resources().get("CPU", 0.0)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return free


@pytest.mark.slow  # a run on Ray workers
def test_a_run_that_fails_to_start_leaves_no_worker_holding_a_cpu(tmp_path, local_ray):
    assert free_cpus(2.0) == 2.0
    taken = tmp_path / "taken"
    taken.write_text("a file where the run folder would go")
    with pytest.raises(OSError):
        trainer(taken, "cannot", workers=2)  # the workers start first, then end when the folder cannot be made
    assert free_cpus(2.0) == 2.0


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"overlap": True}, "overlap set with workers 0"),
        ({"worker_resource": "gpu_box"}, "worker_resource set with workers 0"),
        ({"workers": 4, "num_games": 3}, "workers 4 need num_games of at least 4"),
    ],
)
def test_worker_settings_that_cannot_run_are_refused_before_ray_starts(changes, message):
    with pytest.raises(ValueError, match=message):
        Args(**(RUN | changes))
