"""RLlib PPO's env steps per second on one Ray node and on two simulated nodes, in one run.

Needs the ``rllib`` extra: ``pip install -c constraints.txt -e ".[rllib]"``.

Each set-up is a ``ray.cluster_utils.Cluster`` started on this machine for the run of
``examples/rllib_ppo.py`` (same arguments, ``--env-runner-resource``) that joins it:

=========  ===========================================================================
one node   a head node offering the env runners' resource: the driver (and its
           learner) and the env runners on it
two nodes  a head node for the driver and its learner, and a second node offering the
           resource: the env runners on the second node
=========  ===========================================================================

The set-ups alternate for ``rounds`` rounds (the machine's load drifts); each run
prints its env steps per second after its first iteration (sampling and updates, as PPO
alternates them; the first one holds the actors' start-up), the nodes its env runners
reported, and the load average when it started.

A simulated node is one more raylet and its worker processes on the same machine: it
adds processes, not cores. The figures show that the placement and the plumbing work
and what they cost here, not a speed-up; on a real cluster the second node brings its
own cores::

    python -m experiments.bench_rllib_cluster --iterations 4 --rounds 2

Every field of ``Args`` is a flag (``--train-batch-size 8000``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from barbu_env.util.files import write_text
from barbu_training.config_cli import add_field_flags

#: The custom resource of the nodes that take env runners (one unit per runner).
ENV_RUNNER_RESOURCE = "barbu_env_runner"
#: The set-ups: name -> whether the env runners get a second node.
SETUPS = {"one node": False, "two nodes": True}


@dataclass
class Args:
    iterations: int = 4
    """Training iterations of each run (the first one is left out of the steady rate)."""
    rounds: int = 2
    """Runs of each set-up, alternating."""
    num_env_runners: int = 2
    """Env runners (each node declares this many logical CPUs: one per runner)."""
    envs_per_env_runner: int = 4
    """Games each env runner steps together."""
    train_batch_size: int = 4000
    """Env steps per iteration."""
    minibatch_size: int = 1000
    """Minibatch size of the PPO update."""
    num_epochs: int = 1
    """Passes over each batch."""
    hidden: str = "256,256"
    """Hidden layer widths of the policy and value networks."""
    seed: int = 0
    """Seed of every run."""
    out: str = "runs/bench_rllib_cluster"
    """Folder for each run's checkpoint and summary, and ``bench.json``."""


def run(args: Args, two_nodes: bool, out: Path) -> dict:
    """One PPO run on a fresh simulated cluster (shut down after it): its
    ``rllib_ppo.train`` summary with ``runner_nodes`` (``head`` or ``second`` per env
    runner) and ``load_average`` (1 min, when the run started)."""
    from ray.cluster_utils import Cluster

    from examples import rllib_ppo

    runner_node = {"num_cpus": args.num_env_runners, "resources": {ENV_RUNNER_RESOURCE: args.num_env_runners}}
    head_node = {"num_cpus": args.num_env_runners, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=head_node if two_nodes else head_node | runner_node)
    names = {cluster.head_node.node_id: "head"}
    try:
        if two_nodes:
            names[cluster.add_node(**runner_node).node_id] = "second"
            cluster.wait_for_nodes()
        load = os.getloadavg()[0]
        summary = rllib_ppo.train(
            rllib_ppo.Args(
                iterations=args.iterations,
                address=cluster.address,
                env_runner_resource=ENV_RUNNER_RESOURCE,
                num_env_runners=args.num_env_runners,
                envs_per_env_runner=args.envs_per_env_runner,
                train_batch_size=args.train_batch_size,
                minibatch_size=args.minibatch_size,
                num_epochs=args.num_epochs,
                hidden=args.hidden,
                seed=args.seed,
                out=str(out),
            )
        )
    finally:
        cluster.shutdown()
    return summary | {"runner_nodes": [names[n] for n in summary["env_runner_nodes"]], "load_average": load}


def bench(args: Args) -> dict:
    """Every run of both set-ups (``runs``) and each set-up's median steady rate
    (``median_env_steps_per_second``); also written to ``out/bench.json``."""
    if args.iterations < 2:
        raise ValueError("iterations must be at least 2: the first one is left out of the rates")
    runs = []
    for r in range(args.rounds):
        for name, two_nodes in SETUPS.items():
            summary = run(args, two_nodes, Path(args.out) / f"{name.replace(' ', '_')}_{r}")
            runs.append({"setup": name, "round": r} | {k: v for k, v in summary.items() if k != "history"})
    medians = {
        name: statistics.median(x["env_steps_per_second_after_first_iteration"] for x in runs if x["setup"] == name)
        for name in SETUPS
    }
    result = {"runs": runs, "median_env_steps_per_second": medians}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    write_text(Path(args.out) / "bench.json", json.dumps(result, indent=2))
    return result


def build_parser() -> argparse.ArgumentParser:
    """One ``--field`` per ``Args`` field."""
    description = __doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_rllib_cluster", description=description)
    return add_field_flags(parser, Args)


def main(argv: list[str] | None = None) -> int:
    args = Args(**vars(build_parser().parse_args(argv)))
    result = bench(args)
    print(f"{'set-up':<10} {'round':>5} {'env runners on':<16} {'env steps':>9} {'steps/s':>8} {'load':>5}")
    for x in result["runs"]:
        print(
            f"{x['setup']:<10} {x['round']:>5} {','.join(x['runner_nodes']):<16} {x['env_steps']:>9,} "
            f"{x['env_steps_per_second_after_first_iteration']:>8,.0f} {x['load_average']:>5.1f}"
        )
    medians = result["median_env_steps_per_second"]
    print(
        "median env steps/s after the first iteration: "
        + ", ".join(f"{name} {rate:,.0f}" for name, rate in medians.items())
        + f" ({os.cpu_count()} cores; a simulated node adds processes, not cores)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
