"""The league's verdict (``barbu_env.evaluation.league`` says why this one): an order taken
from the significant head-to-head results (``standings``), the cycles among them named
(``cycle_in``), and beside it the one-number points model (``fit_ratings``) with its
goodness of fit (``Ratings.p_value``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..tournament import Estimate

#: The points model is said not to fit when chi² has a p-value below this.
FIT_LEVEL = 0.05


def chi2_sf(x: float, dof: int) -> float:
    """P(chi² with ``dof`` degrees of freedom >= x), exact for whole ``dof`` (the finite
    series of the regularised upper gamma function).

    >>> round(chi2_sf(3.84, 1), 3), round(chi2_sf(18.31, 10), 3)
    (0.05, 0.05)
    """
    h = x / 2
    if dof % 2 == 0:
        term = total = 1.0
        for i in range(1, dof // 2):
            term *= h / i
            total += term
        return math.exp(-h) * total
    term, total = math.sqrt(h) * 2 / math.sqrt(math.pi), math.erfc(math.sqrt(h))
    for i in range(1, (dof + 1) // 2):
        total += math.exp(-h) * term
        term *= h / (i + 0.5)
    return total


@dataclass(frozen=True)
class Ratings:
    """Least-squares ratings (points per game, summing to zero) and their fit."""

    rating: np.ndarray  # [K]
    chi2: float | None  # weighted sum of squared residuals (None without standard errors)
    dof: int  # pairings - (agents - 1)

    @property
    def p_value(self) -> float | None:
        """P(chi² at least this large) if the margins were additive; None without a test."""
        return chi2_sf(self.chi2, self.dof) if self.chi2 is not None and self.dof > 0 else None

    @property
    def fits(self) -> bool:
        """False when chi² rejects the points model at ``FIT_LEVEL``."""
        return self.p_value is None or self.p_value >= FIT_LEVEL


def fit_ratings(n_agents: int, margins: Sequence[tuple[int, int, Estimate]]) -> Ratings:
    """Ratings r (summing to zero) of ``n_agents`` agents from margins (a, b, estimate of
    a's margin over b): weighted least squares of margin = r_a - r_b, weights 1 / s.e.²
    (unweighted, and no chi², if any margin has none). Every agent must be
    connected to every other through the pairings.

    >>> from barbu_env.evaluation.tournament import Estimate
    >>> e = lambda m: Estimate(m, 10.0, None, 8)
    >>> fit_ratings(3, [(0, 1, e(100.0)), (1, 2, e(50.0)), (0, 2, e(150.0))]).rating.round(1).tolist()
    [83.3, -16.7, -66.7]
    """
    x = np.zeros((len(margins), n_agents))
    y = np.array([m.mean for _, _, m in margins], dtype=np.float64)
    for row, (a, b, _) in enumerate(margins):
        x[row, a], x[row, b] = 1.0, -1.0
    ses = [m.se for _, _, m in margins]
    weighted = bool(margins) and all(s is not None and s > 0 for s in ses)
    w = np.array([1.0 / s**2 for s in ses]) if weighted else np.ones(len(margins))
    laplacian = x.T @ (w[:, None] * x)
    if n_agents > 1 and np.linalg.matrix_rank(laplacian) < n_agents - 1:
        raise ValueError("the pairings do not connect every agent with every other: no common rating scale")
    # The minimum-norm solution: ratings orthogonal to the ones, summing to zero.
    rating = np.linalg.pinv(laplacian) @ (x.T @ (w * y))
    rating -= rating.mean()  # exact zero sum despite rounding
    chi2 = float((w * (y - x @ rating) ** 2).sum()) if weighted else None
    return Ratings(rating, chi2, len(margins) - (n_agents - 1))


def standings(beats: np.ndarray, score: Sequence[float]) -> list[tuple[int, ...]]:
    """The agents in groups, best first, from ``beats`` ([K, K] bool: row beats column, a
    significant head-to-head result): a group is one agent, or the agents of a cycle (a
    strongly connected set: each reaches each other by results, so no order agrees with
    all of theirs). Every significant result points down the list: a group comes after
    every group that beats one of its agents; among groups free to go next, the highest
    mean ``score`` first.

    >>> beats = np.array([[0, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    >>> standings(beats, [0.0, 0.0, 0.0, 9.0])  # 0 beats 1 beats 2 beats 0; 1 beats 3
    [(0, 1, 2), (3,)]
    """
    k = len(beats)
    reach = np.eye(k, dtype=bool) | beats
    for _ in range(k.bit_length()):  # transitive closure by squaring
        reach = reach | (reach.astype(np.int64) @ reach.astype(np.int64) > 0)
    groups = {tuple(np.flatnonzero(reach[i] & reach[:, i]).tolist()) for i in range(k)}
    order: list[tuple[int, ...]] = []
    while groups:
        free = [g for g in groups if not any(beats[np.ix_(h, g)].any() for h in groups if h != g)]
        best = max(free, key=lambda g: (np.mean([score[i] for i in g]), -g[0]))
        order.append(best)
        groups.remove(best)
    return order


def contradictions(beats: np.ndarray, place: Sequence[float]) -> list[tuple[int, int]]:
    """Pairs (i, j) where i beats j (``beats[i, j]``) but is placed below it
    (``place[i] > place[j]``, lower is better; an equal place contradicts nothing).

    >>> contradictions(np.array([[0, 1], [0, 0]], dtype=bool), [-1.0, -2.0])  # 0 beats 1, rated lower
    [(0, 1)]
    """
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(beats)) if place[i] > place[j]]


def cycle_in(group: Sequence[int], beats: np.ndarray) -> list[int]:
    """A shortest cycle of significant results through the group's first agent, as the
    agents in order (each beats the next, the last beats the first).

    >>> beats = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=bool)
    >>> cycle_in((0, 1, 2), beats)
    [0, 1, 2]
    """
    start = group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first through the group's results
        nxt = []
        for a in frontier:
            for b in group:
                if beats[a, b] and b == start:
                    return paths[a]
                if beats[a, b] and b not in paths:
                    paths[b] = paths[a] + [b]
                    nxt.append(b)
        frontier = nxt
    raise ValueError(f"agents {list(group)} form no cycle")
