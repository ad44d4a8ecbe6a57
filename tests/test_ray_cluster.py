"""Scale-out on one machine, on a simulated two-node Ray cluster
(``ray.cluster_utils.Cluster``: a second raylet and its worker processes on this
machine): ``examples/rllib_ppo.py`` with its env runners on the second node, and
``barbu train --workers`` with its rollout workers there (checked by node id); each
run's checkpoint plays in ``barbu eval``.

Slow, and needs the ``rllib`` extra: ``.ci/run``'s integration step runs it with
``pytest -m "slow or not slow"`` and ``BARBU_REQUIRE_INTEGRATIONS=1``."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from integration_extras import require

from barbu_env.cli.main import main as barbu

#: The custom resource only the second node offers; each env runner takes one unit.
ENV_RUNNER_RESOURCE = "barbu_env_runner"
#: Env runners of the run, all on the second node.
ENV_RUNNERS = 2
#: Logical CPUs each simulated node declares: the head could take every env runner too.
CPUS_PER_NODE = 2
#: Games of the evaluation.
EVAL_GAMES = 4


@contextmanager
def two_nodes(resource: str, units: int):
    """A simulated cluster: a head node, and a second node that alone offers ``units`` of
    ``resource``; yields ``(address, head node id, second node id)``, shut down on leaving."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": CPUS_PER_NODE, "include_dashboard": False})
    try:
        second = cluster.add_node(num_cpus=CPUS_PER_NODE, resources={resource: units})
        cluster.wait_for_nodes()
        yield cluster.address, cluster.head_node.node_id, second.node_id
    finally:
        cluster.shutdown()


@pytest.mark.slow
def test_rllib_ppo_trains_with_its_env_runners_on_a_second_node_and_plays_in_barbu_eval(tmp_path, capsys):
    require("ray.rllib")
    from examples import rllib_ppo

    with two_nodes(ENV_RUNNER_RESOURCE, ENV_RUNNERS) as (address, head, second):
        args = rllib_ppo.Args(
            address=address,
            env_runner_resource=ENV_RUNNER_RESOURCE,
            num_env_runners=ENV_RUNNERS,
            envs_per_env_runner=2,
            iterations=2,
            train_batch_size=1000,
            minibatch_size=500,
            num_epochs=1,
            hidden="64",
            out=str(tmp_path),
        )
        summary = rllib_ppo.train(args)
    assert head != second and summary["driver_node"] == head  # the learner is the driver's
    assert summary["env_runner_nodes"] == [second] * ENV_RUNNERS
    assert summary["env_steps"] >= 2 * args.train_batch_size and len(summary["history"]) == 2
    assert json.loads((tmp_path / "summary.json").read_text())["env_runner_nodes"] == summary["env_runner_nodes"]

    checkpoint = Path(summary["checkpoint"])
    code = barbu(
        ["eval", "--agents", f"{checkpoint},heuristic,heuristic,heuristic", "--games", str(EVAL_GAMES)]
        + ["--no-progress", "--workers", "1", "--trust-pickled"]  # an RLlib checkpoint is pickle-based
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"Duplicate tournament: {EVAL_GAMES} games" in out and checkpoint.name in out


#: The custom resource of ``barbu train --workers``' rollout workers on the second node.
ROLLOUT_RESOURCE = "barbu_rollout"


@pytest.mark.slow
def test_barbu_train_rollout_workers_run_on_the_second_node_and_the_checkpoint_plays_in_barbu_eval(tmp_path, capsys):
    require("ray")
    from tiny_runs import tiny

    from barbu_training.config import Args
    from barbu_training.train import train

    with two_nodes(ROLLOUT_RESOURCE, 2) as (address, head, second):
        args = Args(
            **tiny(num_games=4, total_decisions=6000, final_eval_games=0),
            workers=2,
            ray_address=address,
            worker_resource=ROLLOUT_RESOURCE,
            exp_name="cluster",
            run_dir=str(tmp_path),
        )
        summary = train(args)
    assert head != second and summary["workers"]["nodes"] == [second] * 2
    assert summary["decisions"] >= 6000 and summary["workers"]["wire_bytes_per_transition"] > 0

    checkpoint = Path(summary["best_checkpoint"])
    code = barbu(["eval", "--agents", f"{checkpoint},heuristic,heuristic,heuristic", "--games", str(EVAL_GAMES)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"Duplicate tournament: {EVAL_GAMES} games" in out and checkpoint.name in out
