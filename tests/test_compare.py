"""The paired comparison of two tournaments on the same deals (barbu_env/evaluation/tournament/compare.py)
and ``barbu eval --compare``."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from barbu_env.cli.main import main
from barbu_env.evaluation.tournament import compare, evaluate, t95


@pytest.fixture(scope="module")
def pair():
    """heuristic-cautious, then heuristic in its place, among three heuristics: 8 games (2 deal sets) each."""
    a = evaluate(["heuristic-cautious", "heuristic", "heuristic", "heuristic"], games=8, seed=5, workers=1)
    b = evaluate(["heuristic"] * 4, games=8, seed=5, workers=1)
    return a, b


def by_hand(rows_a, rows_b, label_a, label_b, key="scores"):
    """Per deal set, the mean over its games of label_a's value in a minus label_b's in the same game of b."""
    rows_b = {g["game"]: g for g in rows_b}
    per_set = {}
    for g in rows_a:
        h = rows_b[g["game"]]
        per_set.setdefault(g["deal_set"], []).append(
            g[key][g["seats"].index(label_a)] - h[key][h["seats"].index(label_b)]
        )
    return np.array([np.mean(v) for v in per_set.values()])


def test_the_difference_is_per_game_with_its_interval_over_deal_sets(pair):
    a, b = pair
    c = compare(a, b)
    assert (c.a, c.b, c.agents, c.games, c.deal_sets) == ("heuristic-cautious", "heuristic", [0], 8, 2)
    for estimate, key in ((c.difference, "scores"), (c.side_bets, "side_bets")):
        per_set = by_hand(a.game_table, b.game_table, "heuristic-cautious", "heuristic#1", key)
        se = per_set.std(ddof=1) / math.sqrt(2)
        assert estimate.mean == pytest.approx(per_set.mean())
        assert estimate.se == pytest.approx(se)
        assert estimate.ci95 == pytest.approx((per_set.mean() - t95(1) * se, per_set.mean() + t95(1) * se))
    assert c.at_the_table.mean == pytest.approx(c.difference.mean - c.side_bets.mean)
    # the game table's side bets are the entry's: its side-bet gain per hand, 28 hands a game
    side = sum(g["side_bets"][g["seats"].index("heuristic-cautious")] for g in a.game_table) / a.games
    assert side == pytest.approx(a.entries[0].doubling.side_bet_gain.mean * 28)


def test_a_tournament_compared_with_itself_differs_by_exactly_zero(pair):
    a, _ = pair
    c = compare(a, a)
    assert c.agents == [0]
    assert (c.difference.mean, c.difference.se, c.difference.ci95) == (0.0, 0.0, (0.0, 0.0))


def test_tournaments_on_other_deals_are_refused_in_one_line(pair):
    a, b = pair
    with pytest.raises(ValueError, match=r"^compare: .*not played on the same deals \(seed 5 against 6\)$"):
        compare(a, dataclasses.replace(b, seed=6))
    with pytest.raises(ValueError, match=r"\(seed 5 against 6, games 8 against 12\)$"):
        compare(a, dataclasses.replace(b, seed=6, games=12))


def test_eval_compare_prints_both_tournaments_and_the_paired_difference(tmp_path, capsys):
    out = tmp_path / "pair.json"
    args = ["eval", "--agents", "heuristic-cautious,heuristic,heuristic,heuristic", "--compare", "heuristic"]
    assert main([*args, "--games", "4", "--seed", "5", "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("Duplicate tournament: 4 games") == 2
    assert "same deals and seats: heuristic-cautious (first tournament) minus heuristic (second)" in printed
    doc = json.loads(out.read_text())
    a, b = doc["tournaments"]["a"], doc["tournaments"]["b"]
    assert b["tournament"]["agents"] == ["heuristic"] * 4 and b["tournament"]["seed"] == 5
    [diff] = by_hand(a["games"], b["games"], "heuristic-cautious", "heuristic#1")
    assert doc["comparison"]["score_difference_per_game"]["mean"] == pytest.approx(diff, abs=1e-4)
    assert f"score         {diff:+8.1f}" in printed
