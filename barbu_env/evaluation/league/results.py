"""What a league played: each format of each pairing (``FormatResult``), the pairings, and
the whole league's result (``LeagueResult``: margins, matrix, ratings, JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...game.rules import Rules
from ...util.json_layout import write_json
from ..tournament import SEATINGS, Estimate
from ..tournament.compare import by_agent
from ..tournament.stats import rounded, set_means, won_share
from .fit import Ratings, contradictions, cycle_in, standings

#: The formats of a pairing {A, B}: name -> the four agents at the table in seating 0
#: (0 stands for A, 1 for B).
FORMATS: dict[str, tuple[int, int, int, int]] = {
    "1v3": (0, 1, 1, 1),
    "3v1": (1, 0, 0, 0),
    "2v2": (0, 1, 0, 1),
}
#: The same format seen from B's side (the matrix row of B against A).
MIRRORED = {"1v3": "3v1", "3v1": "1v3", "2v2": "2v2"}


@dataclass
class FormatResult:
    """One duplicate tournament of a pairing: ``a`` over ``b`` per deal set."""

    format: str
    specs: tuple[str, ...]  # the four agents at the table in seating 0
    margin: np.ndarray  # per deal set: a's average score per game minus b's
    a_score: np.ndarray  # per deal set: a's average score per game
    games: int
    games_won: float  # share of (game, a-instance, b-instance) where a scored more, ties half
    cached: bool = False  # read from the cache rather than played

    @property
    def estimate(self) -> Estimate:
        return Estimate.of(self.margin)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "agents": list(self.specs),
            "games": self.games,
            # Unrounded: a result read from the cache is the result played.
            "margin_per_deal_set": [float(x) for x in self.margin],
            "a_score_per_deal_set": [float(x) for x in self.a_score],
            "games_won_share": float(self.games_won),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], cached: bool = False) -> FormatResult:
        return cls(
            d["format"],
            tuple(d["agents"]),
            np.asarray(d["margin_per_deal_set"], dtype=np.float64),
            np.asarray(d["a_score_per_deal_set"], dtype=np.float64),
            int(d["games"]),
            float(d["games_won_share"]),
            cached,
        )


def format_result(fmt: str, spec_a: str, result: Any) -> FormatResult:
    """Per-deal-set margins of ``spec_a`` over the other agent from a tournament result
    (its ``specs`` and ``game_table``: in seating r, agent k sits in seat (k + r) % 4)."""
    specs = list(result.specs)
    is_a = np.array([s == spec_a for s in specs])
    scores = by_agent(result, "scores")  # [G, agent], every game of every deal set
    a_s, b_s = scores[:, is_a], scores[:, ~is_a]
    a_mean = a_s.mean(axis=1)
    margin = set_means(a_mean - b_s.mean(axis=1))
    return FormatResult(fmt, tuple(specs), margin, set_means(a_mean), len(scores), won_share(a_s, b_s))


@dataclass
class Pairing:
    """Agents ``a`` and ``b`` (indices into the league's agents), their three formats."""

    a: int
    b: int
    formats: dict[str, FormatResult]  # by format name, seen from a

    @property
    def combined_per_set(self) -> np.ndarray:
        """Margin of a over b per game, per deal set, the formats averaged."""
        n = min(len(f.margin) for f in self.formats.values())
        return np.mean([f.margin[:n] for f in self.formats.values()], axis=0)

    @property
    def combined(self) -> Estimate:
        """Margin of a over b per game, the formats averaged deal set by deal set."""
        return Estimate.of(self.combined_per_set)


@dataclass
class LeagueResult:
    """What ``run_league`` found; ``to_json`` for files, ``format_league`` for people,
    ``plot_league`` for a heatmap."""

    specs: list[str]
    labels: list[str]
    games: int  # per format, rounded up to whole deal sets
    seed: int
    rules: Rules
    rules_name: str
    pairings: list[Pairing]
    ratings: Ratings
    played: int  # formats played in this run
    cached: int  # formats read from the cache
    cache_not_saved: str | None = None  # the cache write that failed, and how many results it left unsaved

    def pairing(self, i: int, j: int) -> tuple[Pairing, int]:
        """The pairing of agents i and j, and +1 if it is seen from i (-1 from j)."""
        for p in self.pairings:
            if (p.a, p.b) == (i, j):
                return p, 1
            if (p.a, p.b) == (j, i):
                return p, -1
        raise KeyError((i, j))

    def margin(self, i: int, j: int, fmt: str | None = None) -> Estimate:
        """Agent i's margin over agent j per game: in format ``fmt`` seen from i (``1v3``:
        i alone against three js), or combined (None)."""
        p, sign = self.pairing(i, j)
        if fmt is None:
            e = p.combined
        else:
            e = p.formats[fmt if sign > 0 else MIRRORED[fmt]].estimate
        return e if sign > 0 else -e

    def matrix(self, fmt: str | None = None) -> np.ndarray:
        """[K, K] margins of row over column per game (NaN on the diagonal)."""
        k = len(self.specs)
        m = np.full((k, k), np.nan)
        for i in range(k):
            for j in range(k):
                if i != j:
                    m[i, j] = self.margin(i, j, fmt).mean
        return m

    def field(self, i: int) -> Estimate:
        """Agent i's rating: its mean margin per game over the league's other agents, per
        deal set (every pairing is played on the same deal sets)."""
        per_set = [(p.combined_per_set if p.a == i else -p.combined_per_set) for p in self.pairings if i in (p.a, p.b)]
        n = min(len(x) for x in per_set)
        return Estimate.of(np.mean([x[:n] for x in per_set], axis=0))

    def rating(self) -> np.ndarray:
        """[K] each agent's rating (``field``)."""
        return np.array([self.field(k).mean for k in range(len(self.specs))])

    def beats(self) -> np.ndarray:
        """[K, K] bool: row beats column head to head (the combined margin's 95% interval above zero)."""
        k = len(self.specs)
        low = [[(self.margin(i, j).ci95 or (0.0,))[0] if i != j else 0.0 for j in range(k)] for i in range(k)]
        return np.array(low) > 0

    def standings(self) -> list[tuple[int, ...]]:
        """Agents in groups, best first (``fit.standings``): every significant result points
        down the list; a group of two or more is a cycle; otherwise by rating."""
        return standings(self.beats(), self.rating())

    def order(self) -> list[int]:
        """Agents by standing, best first."""
        return [k for group in self.standings() for k in group]

    def rank(self) -> np.ndarray:
        """[K] each agent's place in ``standings`` (0 best; the agents of a cycle share one)."""
        place = np.zeros(len(self.specs), dtype=np.int64)
        for n, group in enumerate(self.standings()):
            place[list(group)] = n
        return place

    def rating_contradictions(self) -> list[tuple[int, int]]:
        """Pairs (i, j) of different standings where i beats j head to head but is rated below j."""
        rank = self.rank()
        return [(i, j) for i, j in contradictions(self.beats(), -self.rating()) if rank[i] != rank[j]]

    def unrated(self) -> set[int]:
        """Agents whose rating is not shown: those of a cycle, and those of a rating contradiction."""
        rank = self.rank()
        return {k for pair in self.rating_contradictions() for k in pair} | {
            k for k in range(len(rank)) if (rank == rank[k]).sum() > 1
        }

    def contradicted(self) -> list[tuple[int, int]]:
        """The league's own check of what it shows: pairs (i, j) where i beats j head to head
        but the standings, or the ratings shown (``unrated`` are not), put j above i. Empty
        unless something is wrong."""
        beats, rank, hidden = self.beats(), self.rank(), self.unrated()
        shown = [k for k in range(len(rank)) if k not in hidden]
        by_rating = contradictions(beats[np.ix_(shown, shown)], -self.rating()[shown])
        return sorted(set(contradictions(beats, rank)) | {(shown[i], shown[j]) for i, j in by_rating})

    def to_dict(self) -> dict[str, Any]:
        r, beats, rank, hidden = self.ratings, self.beats(), self.rank(), self.unrated()
        return {
            "league": {
                "agents": self.specs,
                "labels": self.labels,
                "games_per_format": self.games,
                "deal_sets": self.games // SEATINGS,
                "seed": self.seed,
                "rules_name": self.rules_name,
                "rules": self.rules.to_dict(),
                "formats": {name: [("A", "B")[x] for x in table] for name, table in FORMATS.items()},
                "margin": "per game, the row agent's average score minus the column agent's",
                "standing": "every head-to-head whose 95% interval excludes zero points down the list; "
                "a cycle of them shares one rank; otherwise by rating",
                "rating": "mean margin per game over the other agents; null where it contradicts a significant "
                "head-to-head or the agent is in a cycle",
                "points_model": "weighted least squares of combined margins: margin(A, B) = r_A - r_B, sum of r = 0",
            },
            "standings": [
                {
                    "rank": n + 1,
                    "agents": [self.labels[k] for k in group],
                    "cycle": [self.labels[k] for k in cycle_in(group, beats)] if len(group) > 1 else None,
                }
                for n, group in enumerate(self.standings())
            ],
            "ratings": [
                {
                    "label": self.labels[k],
                    "spec": self.specs[k],
                    "rank": int(rank[k]) + 1,
                    "rating": None if k in hidden else self.field(k).to_dict(),
                    "points_model": rounded(r.rating[k]),
                }
                for k in self.order()
            ],
            "fit": {"chi2": rounded(r.chi2), "dof": r.dof, "p_value": r.p_value, "fits": r.fits},
            "significant_results": int(beats.sum()),
            "contradicted": {
                "by_what_is_shown": [[self.labels[i], self.labels[j]] for i, j in self.contradicted()],
                "by_points_model": [[self.labels[i], self.labels[j]] for i, j in contradictions(beats, -r.rating)],
            },
            "matrix": {
                self.labels[i]: {
                    self.labels[j]: {
                        "combined": self.margin(i, j).to_dict(),
                        **{f: self.margin(i, j, f).to_dict() for f in FORMATS},
                    }
                    for j in range(len(self.specs))
                    if j != i
                }
                for i in range(len(self.specs))
            },
            "pairings": [
                {
                    "a": self.labels[p.a],
                    "b": self.labels[p.b],
                    "formats": {name: f.to_dict() for name, f in p.formats.items()},
                }
                for p in self.pairings
            ],
            "run": {
                "formats_played": self.played,
                "formats_cached": self.cached,
                "cache_not_saved": self.cache_not_saved,
            },
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """JSON text (indented, short values on one line); written to ``path`` if given."""
        return write_json(self.to_dict(), path)
