"""``experiments/bench_training.py`` measures the real trainer: decisions per second of the
rollouts and overall, one row per value of a field with ``--compare``."""

from __future__ import annotations

import json
import os

import pytest

from experiments import bench_training


@pytest.mark.slow  # short training runs
def test_training_benchmark_measures_the_trainer(tmp_path, capsys):
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
    # --compare: one row per value of a field, each trained with it
    assert bench_training.main(["--config", str(cfg), "--decisions", "2000", "--json", str(out), "--compare",
                                "update_epochs=1,2"]) == 0  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows] == ["update_epochs=1", "update_epochs=2"]
    assert all(0 < r["update_share"] < 1 and r["update_tps"] > 0 for r in rows)
    with pytest.raises(SystemExit, match="FIELD=V1"):
        bench_training.main(["--config", str(cfg), "--compare", "no_such_field=1,2"])


@pytest.mark.slow  # about 70 s: seven short runs, each starting its workers
def test_bench_scale_prints_every_worker_count_the_update_and_every_training_setting(capsys):
    pytest.importorskip("ray")
    from benchmarks import bench_scale

    assert bench_scale.main(["--quick", "--max-workers", "2"]) == 0
    out = capsys.readouterr().out
    rows = (
        "workers   1:",
        "workers   2:",
        "cpu:",
        "workers   0         torch_threads",
        "workers   2 overlap torch_threads",
    )
    for line in rows:
        assert line in out, out
    assert "policy played: a fresh network" in out
    cores = os.cpu_count() or 1
    for n in bench_scale.worker_counts(min(2, cores)):  # the learner's threads cut to the cores the workers leave
        if bench_scale.learner_threads(cores, n) != 2:  # default.yaml's torch_threads
            assert f"workers {n:>3} overlap torch_threads {bench_scale.learner_threads(cores, n):>3}:" in out, out


@pytest.mark.slow  # every network subject timed
def test_bench_network_prints_every_acting_and_training_subject_with_its_ratio(capsys):
    from benchmarks import bench_network

    assert (
        bench_network.main(["--seconds", "0", "--positions", "96", "--batch", "4", "--minibatch", "8", "--no-pin"]) == 0
    )
    out = capsys.readouterr().out
    for title in ("acting, batch 1", "acting, batch 4", "training step, minibatch 8"):
        assert title in out
    assert out.count("ppo-expert (the reference)") == 2 and out.count("ppo-belief + belief rows") == 2
    assert "belief probabilities (one observation)" in out and "+ belief rows" in out
    reference = [line for line in out.splitlines() if line.startswith("ppo-expert (the reference)")]
    assert all(line.endswith(" 1.00x") for line in reference)
