"""The league cache is trusted only when it checks out: every file carries a checksum of its
key and result, and a file that is edited, damaged, not JSON or not an entry of the shape
its key implies is played again, with a ``LeagueCacheWarning`` (one line from ``barbu
league``), never an exception; an untouched cache is read back without playing."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from barbu_env.cli.main import main
from barbu_env.evaluation import league
from barbu_env.evaluation.league import FORMATS, LeagueCacheWarning, run_league
from barbu_env.evaluation.tournament import evaluate
from barbu_env.game.rules import load_rules

SPECS = ["random", "heuristic"]


class Counting:
    """``tournament.evaluate``, counting the tournaments it plays."""

    def __init__(self):
        self.tables: list[tuple[str, ...]] = []

    def __call__(self, agents, **kwargs):
        self.tables.append(tuple(agents))
        return evaluate(agents, **kwargs)


def play(cache: Path | None, expect_warnings: int = 0):
    """The league of ``SPECS`` (4 games a format, in this process) with ``cache``, the
    tournaments it played, and the cache warnings it gave (checked to be ``expect_warnings``)."""
    counting = Counting()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_league(SPECS, games=4, seed=3, cache_dir=cache, workers=1, evaluate_fn=counting)
    ours = [w for w in caught if issubclass(w.category, LeagueCacheWarning)]
    assert len(ours) == expect_warnings, [str(w.message) for w in ours]
    return result, counting.tables, [str(w.message) for w in ours]


def margins(result) -> dict[str, list[float]]:
    return {name: f.margin.tolist() for p in result.pairings for name, f in p.formats.items()}


@pytest.fixture(scope="module")
def fresh():
    """The league played from scratch, no cache."""
    return play(None)[0]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache folder the league wrote, holding its three formats."""
    folder = tmp_path_factory.mktemp("pristine") / "cache"
    result, tables, _ = play(folder)
    assert len(tables) == len(FORMATS) and result.played == len(FORMATS)
    assert len(list(folder.glob("*.json"))) == len(FORMATS)
    return folder


@pytest.fixture
def cache(pristine, tmp_path):
    """A copy of the pristine cache folder, for a test to damage."""
    return Path(shutil.copytree(pristine, tmp_path / "cache"))


def test_an_untouched_cache_is_read_back_without_playing(cache, fresh):
    result, tables, _ = play(cache)
    assert tables == [] and (result.played, result.cached) == (0, len(FORMATS))
    assert margins(result) == margins(fresh)


def test_an_edited_margin_is_played_again_with_a_warning(cache, fresh):
    path = sorted(cache.glob("*.json"))[0]
    entry = json.loads(path.read_text())
    entry["result"]["margin_per_deal_set"][0] += 100.0  # a better result than was played
    path.write_text(json.dumps(entry, indent=1))
    result, tables, messages = play(cache, expect_warnings=1)
    assert len(tables) == 1 and (result.played, result.cached) == (1, len(FORMATS) - 1)
    assert str(path) in messages[0] and "checksum" in messages[0] and "playing it again" in messages[0]
    assert margins(result) == margins(fresh)  # the margin played, not the one written
    assert play(cache)[1] == []  # and the file written again is sound


def _rewrite_with_checksum(entry: dict) -> dict:
    entry["sha256"] = league._checksum(entry["key"], entry["result"])
    return entry


DAMAGE = {
    "a list": lambda text, other: b"[1]",
    "an empty object": lambda text, other: b"{}",
    "an empty file": lambda text, other: b"",
    "garbage bytes": lambda text, other: b"\xff\xfe\x00garbage\x9c",
    "truncated": lambda text, other: text[: len(text) // 2],
    "deeply nested": lambda text, other: b"[" * 100_000 + b"]" * 100_000,
    "no checksum (an old cache file)": lambda text, other: json.dumps(
        {k: v for k, v in json.loads(text).items() if k != "sha256"}
    ).encode(),
    "a wrong checksum": lambda text, other: json.dumps({**json.loads(text), "sha256": "0" * 64}).encode(),
    "another format's entry": lambda text, other: other,
    "a sound checksum on a result of the wrong shape": lambda text, other: json.dumps(
        _rewrite_with_checksum(
            {**json.loads(text), "result": {**json.loads(text)["result"], "margin_per_deal_set": [1.0, 2.0]}}
        )
    ).encode(),
    "a sound checksum on a non-finite margin": lambda text, other: json.dumps(
        _rewrite_with_checksum(
            {**json.loads(text), "result": {**json.loads(text)["result"], "margin_per_deal_set": [float("inf")]}}
        )
    ).encode(),
    "a sound checksum on a result that is a list": lambda text, other: json.dumps(
        _rewrite_with_checksum({**json.loads(text), "result": [1]})
    ).encode(),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cache_file_is_played_again_with_a_warning_never_an_error(cache, fresh, damage):
    paths = sorted(cache.glob("*.json"))
    texts = [p.read_bytes() for p in paths]
    for k, path in enumerate(paths):  # every file damaged the same way
        path.write_bytes(DAMAGE[damage](texts[k], texts[(k + 1) % len(texts)]))
    result, tables, messages = play(cache, expect_warnings=len(FORMATS))
    assert len(tables) == len(FORMATS) and result.cached == 0
    assert sorted(m.split()[3] for m in messages) == sorted(str(p) for p in paths)
    assert margins(result) == margins(fresh)
    assert play(cache)[1] == []  # rewritten sound


def test_the_cache_key_names_the_barbu_version(monkeypatch):
    rules = load_rules("standard")
    table = ["random", "heuristic", "heuristic", "heuristic"]
    before = league.cache_key(table, 4, 0, rules)
    monkeypatch.setattr(league, "__version__", "999.0")
    after = league.cache_key(table, 4, 0, rules)
    assert before != after and league._key_file(Path("c"), before) != league._key_file(Path("c"), after)


def test_a_written_entry_carries_the_checksum_of_its_key_and_result(cache):
    for path in cache.glob("*.json"):
        entry = json.loads(path.read_text())
        assert set(entry) == {"key", "result", "sha256"}
        assert entry["sha256"] == league._checksum(entry["key"], entry["result"])
        assert np.isfinite(entry["result"]["margin_per_deal_set"]).all()


def test_the_command_reports_a_cache_file_holding_a_list_on_one_line(cache, capsys):
    paths = sorted(cache.glob("*.json"))
    paths[0].write_text("[1]")
    argv = ["league", "--agents", ",".join(SPECS), "--games", "4", "--seed", "3", "--workers", "1"]
    assert main([*argv, "--cache", str(cache), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "1 formats played, 2 read from the cache" in captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("barbu league: warning: league cache file ")
    assert str(paths[0]) in lines[0] and "Traceback" not in captured.err
