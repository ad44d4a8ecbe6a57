"""Training throughput of ``barbu train``: decisions per second of the rollouts and overall.

Runs the real trainer (``barbu_training.train.train``) on a training config for a number of
decisions, with the evaluations turned off, and prints decisions per second of:

* ``rollouts``: playing the games on the batched engine, the policy's inference (and the
  opponents': pool snapshots, baseline agents), the per-seat bookkeeping and GAE;
* ``overall``: rollouts plus the updates (``update_epochs`` passes of PPO over the
  learning seats' transitions), i.e. the trainer's ``charts/SPS`` over the run.

The warm start is skipped (``bc_iterations: 0``) unless ``--imitation`` is given, so
the figures are those of the PPO phase that fills most of a run: the config's opponent
mix, snapshots entering the pool as it says. Start-up (numba's cached kernels) counts
against the figures, as in a real run.

``--compare FIELD=V1,V2`` trains once per value of one training field and prints a row
each, with the update's share of the run and its transitions per second (transitions
times epochs): before and after a change, in the same run (``--repeat`` interleaves
rounds, A B A B, so that a machine's drift falls on both).

Run: ``python -m experiments.bench_training --config configs/train/default.yaml``, or
``python -m experiments.bench_training --compare precision=float32,bfloat16 --repeat 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile

from barbu_env.util.files import write_text


def measure(config: str, decisions: int, imitation: bool, run_dir: str, overrides: dict | None = None) -> dict:
    """Train on ``config`` (with ``overrides``) for ``decisions`` (whole rollouts, so a
    little more) in ``run_dir``, without evaluations; the trainer's own timing of its
    rollouts and updates."""
    from barbu_training.config_cli import load_args
    from barbu_training.train import train

    fixed = {
        "run_dir": run_dir,
        "exp_name": "bench",
        "total_decisions": decisions,
        "time_budget_minutes": 0.0,
        "eval_every": 0,
        "final_eval_games": 4,
        "eval_opponents": "random",
        "progress": False,
        "checkpoint_minutes": 10.0**6,  # never, in a benchmark (the largest valid value)
    }
    if not imitation:
        fixed["bc_iterations"] = 0
    summary = train(load_args(config, {**fixed, **(overrides or {})}))
    t = summary["timing"]
    busy = t["collect_seconds"] + t["update_seconds"]
    return {
        "variant": ",".join(f"{k}={v}" for k, v in (overrides or {}).items()) or "config",
        "decisions": t["decisions"],
        "transitions": t["transitions"],
        "iterations": summary["iterations"],
        "collect_seconds": t["collect_seconds"],
        "update_seconds": t["update_seconds"],
        "update_share": t["update_seconds"] / busy,
        "rollout_dps": t["decisions"] / t["collect_seconds"],
        "update_tps": t["transitions"] * t["update_epochs"] / t["update_seconds"],
        "overall_dps": t["decisions"] / busy,
    }


def parse_compare(text: str) -> list[dict]:
    """``field=a,b`` -> one override per value: ``[{field: a}, {field: b}]`` (values read
    as YAML, then checked against the field's type by the trainer)."""
    import yaml

    from barbu_training.config import Args

    field, sep, values = text.partition("=")
    field = field.strip().replace("-", "_")
    if not sep or not values or field not in Args.__dataclass_fields__:
        raise SystemExit(f"--compare takes FIELD=V1,V2,... with a training field, not {text!r}")
    return [{field: yaml.safe_load(v.strip())} for v in values.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_training", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/train/default.yaml", help="training config (default %(default)s)")
    parser.add_argument(
        "--decisions",
        type=int,
        default=4_000_000,
        help="decisions to train for, all seats (default %(default)s; whole rollouts, so a little more)",
    )
    parser.add_argument("--imitation", action="store_true", help="keep the config's warm start (teacher games)")
    parser.add_argument(
        "--compare",
        help="FIELD=V1,V2,...: one row per value of a training field, same run "
        "(e.g. precision=float32,bfloat16 or update_epochs=3,2)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of the variants, interleaved (A B A B ...; default 1)"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    ns = parser.parse_args(argv)

    variants = parse_compare(ns.compare) if ns.compare else [{}]
    rows = []
    for _round in range(ns.repeat):
        for overrides in variants:
            with tempfile.TemporaryDirectory() as run_dir:
                rows.append(measure(ns.config, ns.decisions, ns.imitation, run_dir, overrides))
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus; "
        f"config {ns.config}{'' if ns.imitation else ' (no warm start)'}\n"
    )
    print(
        f"{'variant':<24} {'decisions':>11} {'iters':>5} {'rollout s':>9} {'update s':>9} {'update %':>8} "
        f"{'rollouts dec/s':>14} {'update tr/s':>11} {'overall dec/s':>13}"
    )
    for row in rows:
        print(
            f"{row['variant']:<24} {row['decisions']:>11,} {row['iterations']:>5} {row['collect_seconds']:>9.1f} "
            f"{row['update_seconds']:>9.1f} {row['update_share']:>8.0%} {row['rollout_dps']:>14,.0f} "
            f"{row['update_tps']:>11,.0f} {row['overall_dps']:>13,.0f}"
        )
    print(
        "\nrollouts: games + inference (policy, snapshots, baselines) + bookkeeping + GAE;"
        " update: PPO's passes over the learning seats' transitions (update tr/s: transitions x epochs"
        " per second); overall: rollouts + updates"
    )
    if ns.json:
        write_text(ns.json, json.dumps({"config": ns.config, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
