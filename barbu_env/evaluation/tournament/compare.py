"""A paired comparison of two tournaments played on the same deals: how much more one agent
scores than another put in its place, against the same opponents.

Contract: ``compare(a, b)`` takes two ``TournamentResult``\\ s played on the same deals and
seats (the same seed, number of games and rules, so every game of ``a`` has the cards,
the first declarer and the seating of the game of ``b`` with its index; else a
``ValueError`` of one line saying what differs) and gives a ``Comparison``: the mean score
per game of the agents at positions ``agents`` of ``a``'s list minus that of the agents at
the same positions of ``b``'s, game by game, then split into what was won at the table
(raw scores) and in the side bets (settled minus raw). Each is an ``Estimate`` over deal
sets, as every tournament statistic is: the differences are averaged over each deal
set's four games, and the mean, standard error and 95% interval (Student's t) are those
of these per-set differences. Luck common to both tournaments (the cards) cancels in the
difference, which is why the pair is played on the same deals.

>>> from barbu_env.evaluation.tournament import evaluate
>>> a = evaluate(["heuristic-cautious", "heuristic", "heuristic", "heuristic"], games=4, seed=3, workers=1)
>>> b = evaluate(["heuristic"] * 4, games=4, seed=3, workers=1)
>>> c = compare(a, b)  # one deal set: no interval
>>> c.a, c.b, c.agents, c.difference.mean == a.instances[0].score.mean - b.instances[0].score.mean
('heuristic-cautious', 'heuristic', [0], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .schedule import agent_labels, seats_of_agents
from .stats import Estimate, TournamentResult, set_means


@dataclass
class Comparison:
    """``a``'s agents over ``b``'s in their place, per game, over the same deal sets."""

    a: str  # the agents compared in the first tournament (entry labels)
    b: str  # in the second
    agents: list[int]  # their positions in the agent lists
    difference: Estimate  # score per game: a's agents' mean minus b's
    at_the_table: Estimate  # the same on raw scores (the difference less the side bets')
    side_bets: Estimate  # the same on the side bets (settled minus raw scores)
    games: int  # in each tournament
    deal_sets: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "agents": self.agents,
            "games": self.games,
            "deal_sets": self.deal_sets,
            "score_difference_per_game": self.difference.to_dict(),
            "at_the_table": self.at_the_table.to_dict(),
            "side_bets": self.side_bets.to_dict(),
        }


def compare(a: TournamentResult, b: TournamentResult, agents: Sequence[int] | None = None) -> Comparison:
    """The agents at positions ``agents`` of ``a``'s agent list against those at the same
    positions of ``b``'s, on the same deals (the module docstring). ``agents``: by
    default the positions where the two lists differ (``[0]`` where none does)."""
    differ = {
        "seed": (a.seed, b.seed),
        "games": (a.games, b.games),
        "rules": (a.rules_name, b.rules_name) if a.rules != b.rules else (None, None),
    }
    differ = [f"{what} {x} against {y}" for what, (x, y) in differ.items() if x != y]
    if differ:
        raise ValueError(f"compare: the two tournaments were not played on the same deals ({', '.join(differ)})")
    if agents is None:
        agents = [k for k, (x, y) in enumerate(zip(a.specs, b.specs)) if x != y] or [0]
    agents = list(agents)

    def per_set(key: str) -> np.ndarray:
        return set_means(by_agent(a, key)[:, agents].mean(axis=1) - by_agent(b, key)[:, agents].mean(axis=1))

    score, side_bets = per_set("scores"), per_set("side_bets")
    return Comparison(
        a=_label(a, agents),
        b=_label(b, agents),
        agents=agents,
        difference=Estimate.of(score),
        at_the_table=Estimate.of(score - side_bets),
        side_bets=Estimate.of(side_bets),
        games=a.games,
        deal_sets=a.deal_sets,
    )


def by_agent(result: TournamentResult, key: str) -> np.ndarray:
    """[G, 4] a per-seat value of the game table (``scores``, ``side_bets``) by agent:
    column k is agent k, games in index order."""
    rows = sorted(result.game_table, key=lambda g: g["game"])
    by_seat = np.array([g[key] for g in rows], dtype=np.float64)
    return np.take_along_axis(by_seat, seats_of_agents([g["seating"] for g in rows]), axis=1)


def _label(result: TournamentResult, agents: list[int]) -> str:
    """The entry labels of the agents at positions ``agents``, each once."""
    entry = agent_labels(result.specs)[0]
    return " + ".join(dict.fromkeys(entry[k] for k in agents))
