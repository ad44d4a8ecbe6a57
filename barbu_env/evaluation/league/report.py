"""The league for people: a text table (``format_league``) and a heatmap (``plot_league``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..tournament import SEATINGS
from ..tournament.report import cell, ci_text, column_width, pyplot, save_figure, signed
from .fit import cycle_in
from .results import FORMATS, LeagueResult


def _standing_lines(r: LeagueResult, width: int) -> list[str]:
    rat, beats, rank, rating = r.ratings, r.beats(), r.rank(), r.rating()
    against, hidden = r.rating_contradictions(), r.unrated()
    lines = [
        "",
        "Standings: every head-to-head margin whose 95% interval excludes zero points down this list; "
        "a cycle of them shares a rank;",
        "otherwise by rating: the mean margin per game over the other agents, shown where it agrees with them",
        f"{'rank':<6}{'agent':<{width}}{'rating':>9}  {'95% CI':<20}",
    ]
    for k in r.order():
        shown = k not in hidden
        place = f"{rank[k] + 1}{'=' if (rank == rank[k]).sum() > 1 else ''}"
        field = r.field(k)
        value = signed(field.mean, 9) if shown else f"{'-':>9}"
        lines.append(f"{place:<6}{r.labels[k]:<{width}}{value}  {ci_text(field.ci95) if shown else '':<20}")
    for group in r.standings():
        if len(group) > 1:
            cycle = cycle_in(group, beats)
            steps = ", ".join(
                f"{r.labels[a]} beats {r.labels[b]} {cell(r.margin(a, b))}"
                for a, b in zip(cycle, cycle[1:] + cycle[:1])
            )
            lines.append(f"  cycle, not ranked among themselves: {steps}")
    n_sig, wrong = int(beats.sum()), r.contradicted()
    lines.append(
        f"  check: the standings and the ratings shown agree with all {n_sig} significant head-to-head results"
        if not wrong
        else f"  check FAILED: {len(wrong)} of the {n_sig} significant head-to-head results contradicted"
    )
    if rat.p_value is not None:
        p = "p < 0.001" if rat.p_value < 0.001 else f"p = {rat.p_value:.3f}"
        lines.append(
            f"  fit of one number per agent (least squares, margin(A, B) = r_A - r_B): chi2 {rat.chi2:.1f} "
            f"on {rat.dof} degrees of freedom, {p}"
        )
    if not rat.fits:
        lines.append(
            "  warning: the margins are not additive (p < 0.05): no rating describes this league; "
            "read the standings and the head-to-head table"
        )
    for a, b in against:
        lines.append(
            f"  not shown: the rating puts {r.labels[b]} ({rating[b]:+.1f}) above {r.labels[a]} ({rating[a]:+.1f}), "
            f"though {r.labels[a]} beats {r.labels[b]} {cell(r.margin(a, b))}"
        )
    return lines


def _matrix_lines(r: LeagueResult, order: list[int], width: int) -> list[str]:
    cw = max(12, width)
    lines = [
        "",
        "Margin per game of row over column, all formats (± half the 95% interval over deal sets)",
        f"{'':<{width}}" + "".join(f"{r.labels[k]:>{cw}}" for k in order),
    ]
    for i in order:
        cells = ["-" if i == j else cell(r.margin(i, j)) for j in order]
        lines.append(f"{r.labels[i]:<{width}}" + "".join(f"{c:>{cw}}" for c in cells))
    return lines


def _format_lines(r: LeagueResult, order: list[int]) -> list[str]:
    pw = column_width(f"{r.labels[p.a]} vs {r.labels[p.b]}" for p in r.pairings)
    lines = [
        "",
        "Per format: A's margin over B per game (1v3: A alone against three Bs; 3v1: three As; 2v2: A,B,A,B)",
        f"{'A vs B':<{pw}}" + "".join(f"{f:>14}" for f in FORMATS) + f"{'combined':>14}{'A games won':>13}",
    ]
    for p in sorted(r.pairings, key=lambda p: (order.index(p.a), order.index(p.b))):
        i, j = (p.a, p.b) if order.index(p.a) < order.index(p.b) else (p.b, p.a)
        won = np.mean([f.games_won if i == p.a else 1.0 - f.games_won for f in p.formats.values()])
        lines.append(
            f"{r.labels[i] + ' vs ' + r.labels[j]:<{pw}}"
            + "".join(f"{cell(r.margin(i, j, f)):>14}" for f in FORMATS)
            + f"{cell(r.margin(i, j)):>14}{won:>13.1%}"
        )
    return lines


def format_league(result: LeagueResult) -> str:
    """The standings with the ratings and their fit, then the matrix of combined margins
    (row over column, ± half the 95% interval), then each pairing's three formats."""
    r = result
    order = r.order()
    width = column_width(r.labels, 10)
    header = [
        f"League: {len(r.specs)} agents, {len(r.pairings)} pairings x {len(FORMATS)} formats "
        f"(1v3, 3v1, 2v2 as A,B,A,B) x {r.games} games "
        f"= {r.games // SEATINGS} deal set{'s' if r.games > SEATINGS else ''} each; "
        f"rules {r.rules_name}; seed {r.seed}",
        f"{r.played} formats played, {r.cached} read from the cache",
    ]
    return "\n".join(header + _standing_lines(r, width) + _matrix_lines(r, order, width) + _format_lines(r, order))


def plot_league(result: LeagueResult, path: str | Path) -> Path:
    """A heatmap of the combined margins (row over column, agents by standing, best at the
    top), each cell written with its mean and ± half its 95% interval, the standings in the
    row labels; saved as PNG."""
    plt = pyplot("plot_league")
    r = result
    order = r.order()
    k = len(order)
    m = r.matrix()[np.ix_(order, order)]
    finite = np.abs(m[np.isfinite(m)])
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    size = 1.2 + 1.1 * k
    fig, ax = plt.subplots(figsize=(size + 1.5, size), layout="constrained")
    image = ax.imshow(np.ma.masked_invalid(m), cmap="RdBu", vmin=-scale, vmax=scale)
    for a in range(k):
        for b in range(k):
            if a == b:
                ax.text(b, a, "-", ha="center", va="center", color="0.4")
                continue
            e = r.margin(order[a], order[b])
            dark = abs(e.mean) > 0.6 * scale
            ax.text(b, a, cell(e), ha="center", va="center", fontsize=9, color="white" if dark else "black")
    ax.set_xticks(range(k), [r.labels[i] for i in order], rotation=30, ha="right")
    ax.set_yticks(range(k), [f"{r.labels[i]} ({r.rank()[i] + 1})" for i in order])
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent (standing)")
    ax.set_title(f"League: margin per game of row over column\n{r.games} games per format x 3 formats, seed {r.seed}")
    fig.colorbar(image, ax=ax, label="points per game", shrink=0.8)
    return save_figure(fig, path, 120)
