"""Distilling a teacher agent into the network (``experiments.distill``): the labels are the
teacher's choices at the student's positions, the fit moves the student towards them,
and the result is a checkpoint that plays."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from barbu_env.agents import ask, make_agent
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.evaluation.tournament import play_game
from barbu_env.game.rules import load_rules
from experiments import distill
from experiments.distill import DistillArgs, collect_labels, decision_kind


@pytest.fixture(scope="module")
def labels():
    args = DistillArgs(teacher="heuristic", beta=0.5, games_per_batch=2)
    return collect_labels((str(checkpoint_path("ppo")), args, 2, 7))


def test_labels_are_the_teachers_choices_at_decisions_with_a_choice(labels):
    assert len(labels["obs"]) > 1000  # two whole games: ~1,200 choices each
    assert (labels["masks"].sum(axis=1) > 1).all()  # forced decisions are not labels
    legal = labels["masks"][np.arange(len(labels["actions"])), labels["actions"]]
    assert legal.all()
    teacher = make_agent("heuristic", seed=0)
    again = ask(teacher, labels["obs"], labels["masks"].view(np.int8))
    assert (again == labels["actions"]).all()  # the heuristic is deterministic: the labels are its picks
    assert set(labels["game"].tolist()) == {0, 1}
    assert set(np.unique(decision_kind(labels["obs"])).tolist()) >= {0, 3, 4, 5}  # declare, double, card, domino


def test_the_students_positions_depend_on_beta():
    path = str(checkpoint_path("ppo"))
    a = collect_labels((path, DistillArgs(teacher="heuristic", beta=0.0), 1, 3))
    b = collect_labels((path, DistillArgs(teacher="heuristic", beta=1.0), 1, 3))
    n = min(len(a["obs"]), len(b["obs"]))
    assert not np.array_equal(a["obs"][:n], b["obs"][:n])  # the student's games, not the teacher's


def test_fitting_moves_the_student_towards_the_teacher(labels):
    model, _ = distill.load_checkpoint(str(checkpoint_path("ppo")))
    before = distill.agreement(model, labels)
    distill.fit(model, labels, DistillArgs(epochs=3, learning_rate=1e-3), torch.Generator().manual_seed(0))
    after = distill.agreement(model, labels)
    assert after["all"] > before["all"] + 0.05
    assert after["decisions"] == len(labels["obs"])


def test_a_distilled_checkpoint_plays_whole_games_legally(tmp_path):
    summary = distill.main(
        ["--teacher", "heuristic", "--games", "2", "--workers", "1", "--epochs", "1", "--out", str(tmp_path)]
    )
    assert json.loads((tmp_path / "summary.json").read_text())["rounds"][0]["labels"] == summary["rounds"][0]["labels"]
    agent = make_agent(str(tmp_path / "distilled.pt"))
    game = play_game([agent] + [make_agent("random", seed=s) for s in range(3)], load_rules("standard"), 0, None)
    assert game.state.is_terminal  # every decision was legal (an illegal one raises)
