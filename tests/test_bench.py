"""Smoke tests of the benchmark (benchmarks/bench.py): tiny budgets, positive figures."""

import json

import numpy as np
import pytest

from benchmarks import bench


def test_engine_bench_fixed_games():
    m = bench.bench_engine_mask(0.0, games=2, rules="standard", seed=1)
    assert m.games == 2
    # Every one of the 28 hands has a declaration and four doubling turns at least.
    assert m.decisions >= 2 * 28 * 5


def test_main_measures_every_subject_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    try:
        bench.main(["--games", "1", "--no-pin", "--pimc-games", "0", "--cpu-time", "--batch", "4", "--json", str(out)])
        assert bench.clock is __import__("time").process_time
    finally:
        bench.use_cpu_time(False)
    doc = json.loads(out.read_text())
    assert doc["machine"]["pinned_core"] is None
    assert doc["settings"]["clock"] == "cpu" and doc["settings"]["batch"] == 4
    results = {r["name"]: r for r in doc["results"]}
    assert {bench.ENGINE_MASK, bench.AEC_ENV, bench.VECTOR, bench.HEARTS_OBS, bench.PYSPIEL_OBSERVER} <= set(results)
    # the same seed, the same game, with or without the observation: the chance steps timed apart
    assert results[bench.PYSPIEL_BARE]["decisions"] == results[bench.PYSPIEL_OBSERVER]["decisions"] > 28 * 20
    assert "1,457 chance nodes (1,457 a game)" in results[bench.PYSPIEL_BARE]["note"]
    assert all(r["decisions_per_second"] > 0 for r in doc["results"])
    assert "B = 4" in results[bench.VECTOR]["note"]
    assert "decisions/s" in capsys.readouterr().out


@pytest.mark.slow  # a whole game of search; the pimc agent itself: tests/test_pimc.py
def test_pimc_bench_plays_whole_games_and_reports_its_search():
    m = bench.bench_pimc(games=1, worlds=2, rules="standard", seed=3)
    assert m.name == bench.PIMC and m.games == 1 and m.decisions > 300 and m.rate > 0
    assert "worlds=2" in m.note and "s per game" in m.note and "rollouts" in m.note


def test_random_legal_actions_are_legal_and_uniform():
    rng = np.random.default_rng(0)
    masks = np.zeros((3, 85), dtype=bool)
    masks[0, [0, 51]] = True
    masks[1, 84] = True
    masks[2, 52:59] = True
    row_ends = np.array([85, 170, 255])
    picks = np.array([bench.random_legal_actions(masks, rng, row_ends) for _ in range(2100)])
    assert masks[np.arange(3), picks].all()
    assert set(picks[:, 0]) == {0, 51} and set(picks[:, 1]) == {84}
    counts = np.bincount(picks[:, 2], minlength=85)[52:59]
    assert counts.min() > 200  # ~300 each
