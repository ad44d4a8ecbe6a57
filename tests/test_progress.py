"""The training progress bar tells the truth: under a time budget it counts percent of the
run by whichever limit ends it first (not decisions out of a total the budget will never
reach), a resumed run starts where it stood, and the final evaluation shows bars too. It
moves during a rollout, not only when an iteration ends, and a run without a bar says
where it stands in lines, the first during its first rollout."""

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


def test_an_iteration_reports_its_decisions_while_its_rollout_plays(tmp_path):
    trainer = Trainer(Args(run_dir=str(tmp_path), exp_name="p", total_decisions=10**6, **tiny(episode="hand")))
    seen = []  # (the rollout's decisions so far, the run's decisions then)
    trainer.iterate(lambda decisions: seen.append((decisions, trainer.decisions)))
    assert seen and seen[0][0] > 0  # after the rollout's first step
    assert all(run == 0 for _, run in seen)  # before the iteration counted its rollout
    assert seen[-1][0] <= trainer.decisions


def test_a_run_without_a_bar_logs_a_line_as_it_starts_and_lines_during_its_first_rollout(tmp_path, caplog, monkeypatch):
    from barbu_training import run

    monkeypatch.setattr(run, "LINE_SECONDS", 0.0, raising=False)  # a line at every step of the bar, not every 30 s
    args = Args(run_dir=str(tmp_path), exp_name="l", total_decisions=150, **tiny(episode="hand", final_eval_games=0))
    with caplog.at_level("INFO", logger="barbu_training"):
        Trainer(args).run()
    lines = [r.getMessage() for r in caplog.records if r.name == "barbu_training.run"]
    assert lines[0].startswith("  0% 0/150 dec") and "it 1 starting" in lines[0]
    during = [line for line in lines[1:] if "it 1 rollout under way" in line]  # before the first iteration ended
    assert during and all(not line.startswith("  0% 0/150") for line in during)
