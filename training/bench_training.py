"""Training throughput of ``barbu train`` with each rollout engine, measured in one run.

Runs the real trainer (``training.ppo.train``) on a training config twice — the batched
engine (``rollout_engine: vector``) and the per-game reference path (``aec``: engine
states in worker processes) — for the same number of decisions each, with the
evaluations turned off, and prints decisions per second of:

* ``rollouts``: playing the games, the policy's inference (and the opponents': pool
  snapshots, baseline agents), the per-seat bookkeeping and GAE, on both cores;
* ``overall``: rollouts plus the PPO updates (``update_epochs`` passes over the
  learning seats' transitions), i.e. the trainer's ``charts/SPS`` over the run.

The warm start is skipped (``bc_iterations: 0``) unless ``--imitation`` is given, so
the figures are those of the PPO phase that fills most of a run: the config's opponent
mix, snapshots entering the pool as it says. Start-up (worker processes, numba's
cached kernels) counts against each engine, as in a real run.

Run: ``python -m training.bench_training --config configs/train/default.yaml``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path


def measure(config: str, engine: str, decisions: int, imitation: bool, run_dir: str) -> dict:
    from training.ppo import load_args, train

    overrides = dict(rollout_engine=engine, run_dir=run_dir, exp_name=f"bench_{engine}", total_decisions=decisions,
                     time_budget_minutes=0.0, eval_every=0, final_eval_games=4, eval_opponents="random",
                     progress=False, checkpoint_every=0)
    if not imitation:
        overrides["bc_iterations"] = 0
    summary = train(load_args(config, overrides))
    t = summary["timing"]
    return {
        "engine": engine,
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
    parser.add_argument("--decisions", type=int, default=4_000_000,
                        help="decisions per engine, all seats (default %(default)s; whole rollouts, so a little more)")
    parser.add_argument("--engines", default="vector,aec", help="engines to measure, in order (default %(default)s)")
    parser.add_argument("--imitation", action="store_true", help="keep the config's warm start (teacher games)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    ns = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as run_dir:
        for engine in ns.engines.split(","):
            rows.append(measure(ns.config, engine, ns.decisions, ns.imitation, run_dir))
    ref = next((r for r in rows if r["engine"] == "aec"), None)
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus; "
          f"config {ns.config}{'' if ns.imitation else ' (no warm start)'}\n")
    print(f"{'engine':8} {'decisions':>11} {'iters':>5} {'rollout s':>9} {'update s':>9} "
          f"{'rollouts dec/s':>14} {'overall dec/s':>13}  ratio to aec (rollouts, overall)")
    for r in rows:
        ratio = ""
        if ref and r is not ref:
            ratio = f"{r['rollout_dps'] / ref['rollout_dps']:.2f} x, {r['overall_dps'] / ref['overall_dps']:.2f} x"
        print(f"{r['engine']:8} {r['decisions']:>11,} {r['iterations']:>5} {r['collect_seconds']:>9.1f} "
              f"{r['update_seconds']:>9.1f} {r['rollout_dps']:>14,.0f} {r['overall_dps']:>13,.0f}  {ratio}")
    print("\nrollouts: games + inference (policy, snapshots, baselines) + bookkeeping + GAE, both cores;"
          " overall: rollouts + PPO updates")
    if ns.json:
        Path(ns.json).write_text(json.dumps({"config": ns.config, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
