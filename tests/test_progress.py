"""The training progress bar tells the truth: under a time budget it counts percent of the
run by whichever limit ends it first (not decisions out of a total the budget will never
reach), a resumed run starts where it stood, and the final evaluation shows bars too."""

from __future__ import annotations

import pytest
from tiny_runs import tiny

from barbu_training.config import Args
from barbu_training.run import Trainer


def test_without_a_time_budget_the_bar_counts_decisions(tmp_path):
    trainer = Trainer(Args(run_dir=str(tmp_path), exp_name="d", total_decisions=10**6, **tiny()))
    trainer.decisions = 250_000
    assert trainer.bar_position() == (250_000, 10**6)


def test_under_a_time_budget_the_bar_counts_percent_by_whichever_limit_comes_first(tmp_path):
    # The default config's shape: two billion decisions that a one-hour budget never reaches.
    args = Args(run_dir=str(tmp_path), exp_name="t", total_decisions=2 * 10**9, time_budget_minutes=600, **tiny())
    trainer = Trainer(args)
    trainer.minutes_before = 300  # half the budget spent in earlier sessions: the time limit leads
    done, total = trainer.bar_position()
    assert total == 100 and done == pytest.approx(50, abs=0.5)
    trainer.minutes_before, trainer.decisions = 0.0, 1_600_000_000  # 80% of the decisions: they lead
    assert trainer.bar_position()[0] == pytest.approx(80, abs=0.5)


def test_a_resumed_run_under_a_budget_starts_its_bar_where_it_stood_and_the_final_evaluation_shows_bars(
    tmp_path, monkeypatch
):
    from barbu_env.evaluation import tournament

    shown = []
    evaluate = tournament.evaluate

    def recording(specs, games, seed, **kw):
        shown.append(kw.get("progress", False))
        return evaluate(specs, games=games, seed=seed, **kw)

    monkeypatch.setattr(tournament, "evaluate", recording)
    args = Args(
        run_dir=str(tmp_path),
        exp_name="r",
        total_decisions=150,
        time_budget_minutes=600,
        **tiny(episode="hand", progress=True),
    )
    trainer = Trainer(args)
    trainer.minutes_before = 300  # as a run resumed at half its budget
    trainer.run()  # ended by its decisions (two iterations of two hands), well inside the budget
    bar = trainer.bar
    assert (bar.total, bar.unit) == (100, "%")
    assert bar.initial == pytest.approx(50, abs=0.5) and bar.n == pytest.approx(100)
    assert shown == [True]  # the final evaluation, against the one eval opponent
