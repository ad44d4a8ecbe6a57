"""The league's ratings: one number per agent, fitted by weighted least squares to the
combined margins of its pairings (``barbu_env.evaluation.league`` says why this model)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..tournament import Estimate

#: Two-sided 95% normal quantile (rating intervals).
Z95 = 1.959964


@dataclass(frozen=True)
class Ratings:
    """Least-squares ratings (points per game, summing to zero) and their fit."""

    rating: np.ndarray  # [K]
    se: np.ndarray | None  # [K] standard errors, None without the pairings' standard errors
    chi2: float | None  # weighted sum of squared residuals (None without standard errors)
    dof: int  # pairings - (agents - 1)

    def ci95(self, k: int) -> tuple[float, float] | None:
        if self.se is None:
            return None
        h = Z95 * float(self.se[k])
        return (float(self.rating[k]) - h, float(self.rating[k]) + h)


def fit_ratings(n_agents: int, margins: Sequence[tuple[int, int, Estimate]]) -> Ratings:
    """Ratings r (summing to zero) of ``n_agents`` agents from margins (a, b, estimate of
    a's margin over b): weighted least squares of margin = r_a - r_b, weights 1 / s.e.²
    (unweighted, and no standard errors, if any margin has none). Every agent must be
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
    cov = np.linalg.pinv(laplacian)  # the minimum-norm solution: ratings orthogonal to the ones, summing to zero
    rating = cov @ (x.T @ (w * y))
    rating -= rating.mean()  # exact zero sum despite rounding
    dof = len(margins) - (n_agents - 1)
    if not weighted:
        return Ratings(rating, None, None, dof)
    residual = y - x @ rating
    chi2 = float((w * residual**2).sum())
    inflate = max(1.0, chi2 / dof) if dof > 0 else 1.0
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None) * inflate)
    return Ratings(rating, se, chi2, dof)
