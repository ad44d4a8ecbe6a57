"""RLlib PPO (new API stack) on the AEC environment: one masked policy shared by all four seats.

Needs the ``rllib`` extra: ``pip install -c constraints.txt -e ".[rllib]"``.

Environment: ``barbu_env.envs.rllib_env.BarbuMultiAgentEnv``, the AEC environment as an
RLlib ``MultiAgentEnv``: only the agent to act gets an observation,
``{"observations", "action_mask"}``, and each seat is credited with its own settled
hand scores only.

Policy: the four agents map to the one policy ``"shared"``, a
``barbu_env.envs.rllib_env.MaskedPPOTorchRLModule``: RLlib's default PPO module (MLP
encoders of ``hidden`` widths for the policy and for the value) with masked logits.

Single machine, no setup::

    python -m examples.rllib_ppo --iterations 20 --num-env-runners 2 --out runs/rllib

Ray cluster: ``ray start --head`` on one node, ``ray start --address HEAD_IP:6379`` on
each other node (each with this project installed in the same way), then the same
command with ``--address auto`` (or ``--address HEAD_IP:6379``) on the head node.
To keep the env runners off the head node (which runs the driver and its learner),
start the other nodes with a custom resource, ``ray start --address HEAD_IP:6379
--resources '{"env_runner": 4}'``, and add ``--env-runner-resource env_runner``: each
env runner takes one unit of it, so they go to those nodes only. ``summary.json``
lists the node ids the env runners ran on.
``tests/test_ray_cluster.py`` trains so on a simulated two-node cluster
(``ray.cluster_utils.Cluster``), and ``experiments/bench_rllib_cluster.py`` measures it.

The algorithm checkpoint is saved to ``out/checkpoint``; its shared policy is an agent
for ``barbu eval`` (``barbu_training.external_agents.load_rllib_agent``)::

    barbu eval --agents runs/rllib/checkpoint,heuristic,heuristic,heuristic --games 200 --trust-pickled

Every field of ``Args`` is a flag (``--train-batch-size 8000``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from barbu_env.util.extras import MissingExtraError, needs
from barbu_env.util.files import OutputError, write_text

try:
    with needs("rllib", "examples.rllib_ppo", package="ray[rllib]"):  # one line if the extra is missing
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from barbu_env.envs.rllib_env import BarbuMultiAgentEnv, MaskedPPOTorchRLModule
except MissingExtraError as e:  # run as a script: the one line, without a traceback
    if __name__ != "__main__":
        raise
    raise SystemExit(e) from None
from barbu_training.config_cli import add_field_flags
from barbu_training.external_agents import RLLIB_POLICY_ID


@dataclass
class Args:
    iterations: int = 20
    """Training iterations (each samples ``train_batch_size`` env steps, then updates)."""
    minutes: float = 0.0
    """Also stop after the iteration that ends past this many minutes (0: no limit)."""
    address: str = ""
    """Ray cluster to join (``auto``, or ``HOST:6379``); empty: start Ray on this machine."""
    num_env_runners: int = 2
    """Sampling actors (each steps its own games)."""
    envs_per_env_runner: int = 4
    """Games each env runner steps together."""
    env_runner_resource: str = ""
    """Custom Ray resource each env runner takes one unit of, so that they run only on the nodes that offer it
    (``ray start --resources '{"NAME": 4}'``); empty: on any node."""
    train_batch_size: int = 8000
    """Env steps (decisions, all seats) per iteration."""
    minibatch_size: int = 1000
    """Minibatch size of the PPO update."""
    num_epochs: int = 4
    """Passes over each batch."""
    lr: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.995
    """Discount per decision of the same seat."""
    lambda_: float = 0.95
    """GAE lambda."""
    entropy_coeff: float = 0.01
    """Entropy bonus weight."""
    reward_scale: float = 0.01
    """Factor on the settled hand scores (points) to make rewards."""
    hidden: str = "256,256"
    """Hidden layer widths of the policy and value networks."""
    rules: str = "standard"
    """Rules preset or YAML path."""
    seed: int = 0
    """Seed of the run."""
    out: str = "runs/rllib"
    """Folder for ``checkpoint/`` and ``summary.json``."""


# ---------------------------------------------------------------------- the algorithm


def build_config(args: Args) -> PPOConfig:
    """PPO with one shared masked policy for the four seats."""
    hidden = [int(w) for w in args.hidden.split(",")]
    return (
        PPOConfig()
        .environment(
            BarbuMultiAgentEnv,
            env_config={"rules": args.rules, "reward_scale": args.reward_scale},
            # RLlib's env checker steps with unmasked random actions, which the game rejects.
            disable_env_checking=True,
        )
        .multi_agent(
            policies={RLLIB_POLICY_ID},
            policy_mapping_fn=lambda agent_id, episode, **kwargs: RLLIB_POLICY_ID,
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    RLLIB_POLICY_ID: RLModuleSpec(
                        module_class=MaskedPPOTorchRLModule,
                        model_config={"fcnet_hiddens": hidden, "head_fcnet_hiddens": [], "vf_share_layers": False},
                    )
                }
            )
        )
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.envs_per_env_runner,
            custom_resources_per_env_runner={args.env_runner_resource: 1} if args.env_runner_resource else {},
        )
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.minibatch_size,
            num_epochs=args.num_epochs,
            lr=args.lr,
            gamma=args.gamma,
            lambda_=args.lambda_,
            entropy_coeff=args.entropy_coeff,
        )
        .debugging(seed=args.seed)
    )


def _node_id(_runner) -> str:
    """The Ray node id of the process this runs in (called on each env runner)."""
    import ray

    return ray.get_runtime_context().get_node_id()


def train(args: Args) -> dict:
    """Train for ``iterations`` (or ``minutes``), save ``out/checkpoint``; returns a
    summary with the throughput (env steps per second over the run, sampling and
    updates together, as PPO alternates them) and where it ran: the Ray node ids of the
    driver (and its learner) and of each remote env runner, as the runners report them."""
    import ray

    Path(args.out).mkdir(parents=True, exist_ok=True)
    ray.init(address=args.address or None, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_config(args).build_algo()
        start = time.monotonic()
        history = []
        for i in range(args.iterations):
            result = algo.train()
            history.append(
                {
                    "iteration": i + 1,
                    "env_steps": int(result["num_env_steps_sampled_lifetime"]),
                    "seconds": round(time.monotonic() - start, 1),
                    "games": int(result.get("env_runners", {}).get("num_episodes_lifetime", 0)),
                }
            )
            if args.minutes and time.monotonic() - start > 60 * args.minutes:
                break
        seconds = time.monotonic() - start
        driver_node = ray.get_runtime_context().get_node_id()
        env_runner_nodes = algo.env_runner_group.foreach_env_runner(_node_id, local_env_runner=False)
        checkpoint = Path(args.out).resolve() / "checkpoint"
        _save_checkpoint(algo, checkpoint)
        algo.stop()
    finally:
        ray.shutdown()
    steps = history[-1]["env_steps"] if history else 0
    steady = None  # past the first iteration (actor start-up, first compilation)
    if len(history) > 1:
        first, last = history[0], history[-1]
        steady = round((last["env_steps"] - first["env_steps"]) / (last["seconds"] - first["seconds"]), 1)
    summary = {
        "checkpoint": str(checkpoint),
        "env_steps": steps,
        "minutes": round(seconds / 60, 2),
        "env_steps_per_second": round(steps / seconds, 1) if seconds else 0.0,
        "env_steps_per_second_after_first_iteration": steady,
        "history": history,
        "driver_node": driver_node,
        "env_runner_nodes": env_runner_nodes,
        "args": dataclasses.asdict(args),
    }
    write_text(Path(args.out) / "summary.json", json.dumps(summary, indent=2))
    return summary


def _save_checkpoint(algo, folder: Path) -> None:
    """``algo.save_to_path(folder)`` whole or not at all: saved into a new folder beside
    it, then swapped in; on a failure (a full disk) the new folder is removed, an old
    checkpoint stays as it was, and ``OutputError`` names the folder."""
    new = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    old = folder.with_name(f"{new.name}.old")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(new, 0o777 & ~umask)  # mkdtemp's folder is private; a checkpoint folder is not
        algo.save_to_path(str(new))
        if folder.exists():
            folder.rename(old)
        new.rename(folder)
    except BaseException as e:  # a full disk, Ray's own errors, Ctrl-C: the old checkpoint back
        shutil.rmtree(new, ignore_errors=True)
        if old.exists() and not folder.exists():
            old.rename(folder)
        if isinstance(e, OSError):
            reason = e.strerror or e
            raise OutputError(f"could not write {folder}: {reason} (any old checkpoint is unchanged)") from None
        raise
    shutil.rmtree(old, ignore_errors=True)


def build_parser() -> argparse.ArgumentParser:
    """One ``--field`` per ``Args`` field."""
    parser = argparse.ArgumentParser(prog="python -m examples.rllib_ppo", description=__doc__.split("\n\n")[0])
    return add_field_flags(parser, Args)


def main(argv: list[str] | None = None) -> int:
    args = Args(**vars(build_parser().parse_args(argv)))
    try:
        summary = train(args)
    except OSError as e:  # barbu_env.util.files.OutputError: a file not written, named
        print(f"python -m examples.rllib_ppo: error: {e}", file=sys.stderr)
        return 1
    steady = summary["env_steps_per_second_after_first_iteration"]
    print(
        f"RLlib PPO: {summary['env_steps']:,} env steps in {summary['minutes']:.1f} min, sampling and updates: "
        f"{summary['env_steps_per_second']:,.0f} env steps/s"
        + (f" ({steady:,.0f} after the first iteration)" if steady else "")
        + f" with {args.num_env_runners} env runners x {args.envs_per_env_runner} games; "
        f"checkpoint saved to {summary['checkpoint']}"
    )
    agents = f"{summary['checkpoint']},heuristic,heuristic,heuristic"
    print(f"evaluate: barbu eval --agents {agents} --games 200 --trust-pickled")  # a pickle-based checkpoint
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
