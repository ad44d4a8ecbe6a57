"""Training throughput of ``barbu train``: decisions per second of the rollouts and overall.

Runs the real trainer (``training.ppo.train``) on a training config for a number of
decisions, with the evaluations turned off, and prints decisions per second of:

* ``rollouts``: playing the games on the batched engine, the policy's inference (and the
  opponents': pool snapshots, baseline agents), the per-seat bookkeeping and GAE;
* ``overall``: rollouts plus the updates (``update_epochs`` passes of PPO over the
  learning seats' transitions), i.e. the trainer's ``charts/SPS`` over the run.

The warm start is skipped (``bc_iterations: 0``) unless ``--imitation`` is given, so
the figures are those of the PPO phase that fills most of a run: the config's opponent
mix, snapshots entering the pool as it says. Start-up (numba's cached kernels) counts
against the figures, as in a real run.

Run: ``python -m training.bench_training --config configs/train/default.yaml``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path


def measure(config: str, decisions: int, imitation: bool, run_dir: str) -> dict:
    """Train on ``config`` for ``decisions`` (whole rollouts, so a little more) in
    ``run_dir``, without evaluations; the trainer's own timing of its rollouts and updates."""
    from training.ppo import load_args, train

    overrides = {
        "run_dir": run_dir,
        "exp_name": "bench",
        "total_decisions": decisions,
        "time_budget_minutes": 0.0,
        "eval_every": 0,
        "final_eval_games": 4,
        "eval_opponents": "random",
        "progress": False,
        "checkpoint_minutes": float("inf"),
    }
    if not imitation:
        overrides["bc_iterations"] = 0
    summary = train(load_args(config, overrides))
    t = summary["timing"]
    return {
        "decisions": t["decisions"],
        "iterations": summary["iterations"],
        "collect_seconds": t["collect_seconds"],
        "update_seconds": t["update_seconds"],
        "rollout_dps": t["decisions"] / t["collect_seconds"],
        "overall_dps": t["decisions"] / (t["collect_seconds"] + t["update_seconds"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.bench_training", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/train/default.yaml", help="training config (default %(default)s)")
    parser.add_argument(
        "--decisions",
        type=int,
        default=4_000_000,
        help="decisions to train for, all seats (default %(default)s; whole rollouts, so a little more)",
    )
    parser.add_argument("--imitation", action="store_true", help="keep the config's warm start (teacher games)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    ns = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as run_dir:
        row = measure(ns.config, ns.decisions, ns.imitation, run_dir)
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus; "
        f"config {ns.config}{'' if ns.imitation else ' (no warm start)'}\n"
    )
    print(
        f"{'decisions':>11} {'iters':>5} {'rollout s':>9} {'update s':>9} {'rollouts dec/s':>14} {'overall dec/s':>13}"
    )
    print(
        f"{row['decisions']:>11,} {row['iterations']:>5} {row['collect_seconds']:>9.1f} {row['update_seconds']:>9.1f} "
        f"{row['rollout_dps']:>14,.0f} {row['overall_dps']:>13,.0f}"
    )
    print(
        "\nrollouts: games + inference (policy, snapshots, baselines) + bookkeeping + GAE;"
        " overall: rollouts + PPO updates"
    )
    if ns.json:
        Path(ns.json).write_text(json.dumps({"config": ns.config, "rows": [row]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
