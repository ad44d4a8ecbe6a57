"""The learner alone: ``barbu_training.ppo.PPO`` iterates with a collector and a writer,
without a run around it, and a run's iteration (``barbu_training.run.Trainer``) is exactly
the learner's."""

from __future__ import annotations

import torch
from tiny_runs import tiny

from barbu_training.config import Args
from barbu_training.ppo import PPO
from barbu_training.preflight import prepare
from barbu_training.rollout import Collector
from barbu_training.run import Trainer


class Scalars:
    """A TensorBoard writer's ``add_scalar``, kept: tag -> (value, step)."""

    def __init__(self):
        self.tags: dict[str, tuple[float, int]] = {}

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.tags[tag] = (value, step)


def test_the_learner_alone_iterates_and_writes_nothing_and_the_run_iterates_alike(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = Args(run_dir=str(tmp_path / "runs"), exp_name="alone", total_decisions=10**6, **tiny(episode="hand"))
    ready = prepare(args)
    learner = PPO(args, ready.device, ready.dtype)
    learner.collector = Collector(args, ready.rules, dtype=ready.dtype)
    learner.writer = Scalars()
    learner.iterate()
    assert list(tmp_path.iterdir()) == []  # no run folder, no file
    assert learner.iteration == 1 and learner.decisions > 0
    assert {"charts/SPS", "charts/learning_rate", "losses/policy_loss", "losses/value_loss"} <= set(learner.writer.tags)
    assert {step for _, step in learner.writer.tags.values()} == {learner.decisions}

    trainer = Trainer(args)
    trainer.iterate()
    trainer.writer.close()
    assert (trainer.iteration, trainer.decisions) == (learner.iteration, learner.decisions)
    ours, theirs = learner.model.state_dict(), trainer.model.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
