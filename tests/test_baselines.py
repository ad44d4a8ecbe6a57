"""The baselines script (experiments/baselines.py) at tiny size, and docs/baselines.md against its JSON."""

import json
from pathlib import Path

import pytest

from experiments import baselines

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _rows(markdown: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_tiny_run_writes_a_row_per_agent_a_column_per_opponent_and_keeps_finished_cells(tmp_path):
    out, md, page = tmp_path / "b.json", tmp_path / "b.md", tmp_path / "page.md"
    page.write_text(f"# Baselines\n\n{baselines.START}\nold\n{baselines.END}\n\nafter\n")
    kept = {"agent": "random", "opponent": "heuristic", "games": 8, "seed": 3, "rules": "standard"}
    kept |= {"command": "x", "barbu_version": "0", "commit": None, "minutes": 0.0, "workers": 1}
    kept |= {k: {"mean": -123.0, "ci95": None} for k in ("score", "at_the_table", "side_bets")}
    out.write_text(json.dumps({"cells": [kept]}))
    args = ["--agents", "heuristic,random", "--opponents", "random,heuristic", "--games", "7", "--seed", "3"]
    doc = baselines.main([*args, "--json", str(out), "--markdown", str(md), "--page", str(page)])

    assert json.loads(out.read_text()) == doc
    assert [(c["agent"], c["opponent"]) for c in doc["cells"]] == [("random", "heuristic"), ("heuristic", "random")]
    assert doc["cells"][0] == kept  # finished already: not played again
    played = doc["cells"][1]
    assert played["games"] == 8  # two deal sets: intervals
    assert played["command"] == "barbu eval --agents heuristic,random,random,random --games 8 --seed 3"
    score, table, side = played["score"], played["at_the_table"], played["side_bets"]
    assert score["mean"] == pytest.approx(table["mean"] + side["mean"])
    assert side["mean"] > table["mean"] > 0  # against random the heuristic's doubles win it more than its play
    half = [(e["ci95"][1] - e["ci95"][0]) / 2 for e in (score, table, side)]
    assert half[1] == pytest.approx(half[0] + half[2]) and half[0] > 0  # conservative: the sum of the two

    scores = _rows(md.read_text(), "| agent | vs 3")
    heuristic = baselines._interval(played["score"])
    assert scores == [["`random`", "0 (itself)", "-123.0"], ["`heuristic`", heuristic, "0 (itself)"]]
    cells = _rows(md.read_text(), "| agent | opponents |")
    assert [row[:3] for row in cells] == [
        ["`random`", "3 `heuristic`", "-123.0"],
        ["`heuristic`", "3 `random`", heuristic],
    ]
    assert page.read_text() == f"# Baselines\n\n{baselines.START}\n{md.read_text()}{baselines.END}\n\nafter\n"


def test_cells_not_measured_are_shown_with_their_command():
    doc = {"games": 400, "seed": 5959, "rules": "standard", "agents": ["ppo"], "opponents": ["pimc"], "cells": []}
    md = baselines.tables(doc)
    assert _rows(md, "| agent | vs 3") == [["`ppo`", "not measured"]]
    assert "`barbu eval --agents ppo,pimc,pimc,pimc --games 400 --seed 5959`" in md


def test_docs_page_shows_the_tables_of_its_json():
    page = (DOCS / "baselines.md").read_text()
    inside = page.split(baselines.START + "\n")[1].split(baselines.END)[0]
    assert inside == baselines.tables(json.loads((DOCS / "baselines.json").read_text()))
