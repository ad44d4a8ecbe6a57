"""Tournament sizes: jobs are handed out a bounded number in flight, and the results of
normal sizes are those the code gave before."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ProcessPoolExecutor

import pytest

from barbu_env.evaluation import tournament
from barbu_env.evaluation.tournament import evaluate

# Computed with the code before jobs were made lazily (commit d73d727):
# evaluate(["random", "heuristic", "random", "heuristic"], games=40, seed=7, workers=1 or 2).
EXPECTED_SCORES_SHA256 = "fce85b3150c7d7b319fcfa9209b32e615e4e6d5ec436174381e5dc55a3ae86a2"
EXPECTED_MEANS = [-738.45, 738.45]
EXPECTED_SE = 26.326299166000865


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
