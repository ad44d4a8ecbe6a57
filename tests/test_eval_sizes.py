"""Tournament sizes: ``--games`` below 1 is refused at once with one line (``barbu eval``
and ``barbu league``), jobs are made as they are handed out (a bounded number in flight),
and the results of normal sizes are those the code gave before."""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ProcessPoolExecutor

import pytest

from barbu_env.cli.main import main
from barbu_env.evaluation import tournament
from barbu_env.evaluation.tournament import evaluate, schedule

FOUR = "random,random,random,random"
EVAL = ["eval", "--agents", FOUR, "--no-progress"]
LEAGUE = ["league", "--agents", "random,heuristic", "--no-cache", "--no-progress"]

# Computed with the code before jobs were made lazily (commit d73d727):
# evaluate(["random", "heuristic", "random", "heuristic"], games=40, seed=7, workers=1 or 2).
EXPECTED_SCORES_SHA256 = "fce85b3150c7d7b319fcfa9209b32e615e4e6d5ec436174381e5dc55a3ae86a2"
EXPECTED_MEANS = [-738.45, 738.45]
EXPECTED_SE = 26.326299166000865


def one_line_error(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"barbu {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [[*EVAL, "--games", "0"], [*LEAGUE, "--games", "0"]],
    ids=["eval 0", "league 0"],
)
def test_no_games_or_fewer_is_refused_with_one_line(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as e:  # refused by the option's type, while parsing
        code = e.code
    assert code not in (0, None)
    captured = capsys.readouterr()
    line = one_line_error(captured.err, argv[0])
    assert captured.out == "" and "games" in line and re.search("at least 1|positive integer", line)


class Stop(Exception):
    pass


def test_jobs_are_made_as_they_are_played_not_all_first(monkeypatch):
    made: list[tuple] = []
    first_play: list[int] = []
    job_class = tournament._Job

    def counting_job(*args):
        made.append(args)
        return job_class(*args)

    def play(job):
        first_play.append(len(made))  # jobs made when the first is played
        raise Stop

    monkeypatch.setattr(schedule, "_Job", counting_job)
    monkeypatch.setattr(tournament, "_play_job", play)
    with pytest.raises(Stop):
        evaluate(FOUR.split(","), games=4 * 16 * 20, seed=0, workers=1)  # 20 jobs of 16 deal sets
    assert first_play == [1]


class PeakInFlight(ProcessPoolExecutor):
    """A process pool that keeps the most futures it ever had unfinished at once."""

    peak = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.live: set = set()

    def submit(self, fn, /, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        self.live.add(future)
        PeakInFlight.peak = max(PeakInFlight.peak, len(self.live))
        future.add_done_callback(self.live.discard)
        return future


@pytest.mark.parametrize("workers", [1, 2])
def test_normal_sizes_give_the_results_they_gave_before(workers, monkeypatch):
    PeakInFlight.peak = 0
    monkeypatch.setattr(tournament, "ProcessPoolExecutor", PeakInFlight)
    result = evaluate(["random", "heuristic", "random", "heuristic"], games=40, seed=7, workers=workers)
    scores = [g["scores"] for g in result.game_table]
    assert hashlib.sha256(json.dumps(scores).encode()).hexdigest() == EXPECTED_SCORES_SHA256
    assert [e.score.mean for e in result.entries] == EXPECTED_MEANS
    assert result.entries[0].score.se == EXPECTED_SE
    if workers > 1:  # 10 jobs, never more than JOBS_IN_FLIGHT_PER_WORKER per worker handed out
        assert 0 < PeakInFlight.peak <= workers * tournament.JOBS_IN_FLIGHT_PER_WORKER
