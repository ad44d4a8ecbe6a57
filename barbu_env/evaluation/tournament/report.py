"""Tournament results for people: the text table and the plot.

Contract: ``format_table`` gives a ``TournamentResult`` as text (``format_comparison`` a
``Comparison`` of two) and ``plot_results`` as an image (matplotlib, the ``plot`` extra) in
one of ``PLOT_SUFFIXES``, chosen by the file's ending (``plot_format`` refuses any other
before anything is played). Every file is
written whole or not at all (``barbu_env.util.files``: a failed write leaves the old file
and raises ``OutputError`` naming it). Nothing here computes a statistic: every number
shown is read from the result. The small helpers (``signed``, ``ci_text``, ``cell``,
``column_width``, ``progress_bar``, ``pyplot``, ``save_figure``, ``style_axes``) are
shared with ``evaluate`` and the league (``barbu_env.evaluation.league``). The JSON files
are laid out by ``barbu_env.util.json_layout``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from barbu_env.game.constants import CONTRACT_LABELS, CONTRACT_NAMES, NUM_CONTRACTS
from barbu_env.util.extras import require
from barbu_env.util.files import cut_text, quote, replacing

from .schedule import SEATINGS

if TYPE_CHECKING:
    from types import ModuleType

    from .compare import Comparison
    from .stats import EntryStats, Estimate, TournamentResult

#: Column heads of the per-contract table, in Contract order.
_CONTRACT_HEADS = ("NoTricks", "NoHearts", "NoQueens", "Barbu", "NoLast2", "Trumps", "Domino")


# ---------------------------------------------------------------------- text


def signed(x: float | None, width: int = 7, digits: int = 1) -> str:
    """``x`` with its sign, right-aligned in ``width``; ``-`` for None.

    >>> signed(3.14159), signed(None, 3), signed(-2.5, 6, 2)
    ('   +3.1', '  -', ' -2.50')
    """
    return f"{'-':>{width}}" if x is None else f"{x:+{width}.{digits}f}"


def ci_text(ci: tuple[float, float] | None) -> str:
    """An interval as ``[low, high]`` (signed, one decimal); empty for None.

    >>> ci_text((-1.25, 3.0)), ci_text(None)
    ('[-1.2, +3.0]', '')
    """
    return "" if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def cell(e: Estimate) -> str:
    """An estimate in a few characters: its mean ± half its 95% interval (whole numbers).

    >>> from barbu_env.evaluation.tournament import Estimate
    >>> cell(Estimate(12.4, 3.0, (6.0, 18.8), 5)), cell(Estimate(-3.0, None, None, 1))
    ('+12±6', '-3')
    """
    if e.ci95 is None:
        return f"{e.mean:+.0f}"
    return f"{e.mean:+.0f}±{(e.ci95[1] - e.ci95[0]) / 2:.0f}"


def column_width(texts: Iterable[str], at_least: int = 0) -> int:
    """Width of a left column holding ``texts``: the longest (or ``at_least``) plus two."""
    return max(at_least, *(len(t) for t in texts)) + 2


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural but for one (``1 deal set``, ``100 deal sets``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _se(e: Estimate) -> str:
    return f"{e.se:7.1f}" if e.se is not None else f"{'-':>7}"


def _header(r: TournamentResult) -> list[str]:
    lines = [
        f"Duplicate tournament: {r.games} games = {_count(r.deal_sets, 'deal set')} x {SEATINGS} seatings; "
        f"rules {r.rules_name}; seed {r.seed}",
        "Seating 0: "
        + ", ".join(f"P{s} {lab}" for s, lab in enumerate(r.labels))
        + "; seating r moves every agent r seats left",
    ]
    if r.run.get("seconds"):
        lines.append(
            f"{r.games} games in {r.run['seconds']:.1f} s on {r.run['workers']} worker(s): "
            f"{r.run['games_per_second']:.1f} games/s"
        )
    if r.run.get("records_saved"):
        lines.append(f"{r.run['records_saved']} game records saved in {r.run['records_dir']}")
    return lines


def _score_lines(r: TournamentResult, width: int) -> list[str]:
    se_note = "s.e. and 95% CI over deal sets" if r.deal_sets > 1 else "one deal set: no s.e."
    lines = [
        "",
        f"Score per game ({se_note})",
        f"{'entry':<{width}}{'mean':>8}{'s.e.':>7}  {'95% CI':<20}{'1st place':>10}",
    ]

    def row(label: str, e: Estimate, first: float, indent: str = "") -> str:
        return f"{indent + label:<{width}}{signed(e.mean, 8)}{_se(e)}  {ci_text(e.ci95):<20}{first:>9.1%}"

    for e in r.entries:
        lines.append(row(e.label, e.score, e.first_place))
        if len(e.instances) > 1:
            for k in e.instances:
                inst = r.instances[k]
                lines.append(row(inst.label, inst.score, inst.first_place, "  "))
    return lines


def _contract_lines(r: TournamentResult, width: int) -> list[str]:
    lines = [
        "",
        "Mean settled score per hand by contract (as declarer: one hand per game; as defender: three)",
        f"{'entry':<{width}}{'role':<10}" + "".join(f"{h:>10}" for h in _CONTRACT_HEADS),
    ]
    for e in r.entries:
        for role, est in (("declarer", e.declarer), ("defender", e.defender)):
            label = e.label if role == "declarer" else ""
            lines.append(f"{label:<{width}}{role:<10}" + "".join(f"{signed(est[c].mean, 10)}" for c in CONTRACT_NAMES))
    return lines


def _doubling_lines(r: TournamentResult, width: int) -> list[str]:
    lines = [
        "",
        "Doubling, per hand",
        f"{'entry':<{width}}{'doubles':>9}{'rate':>8}{'doubled':>9}{'redoubles':>11}{'per dbl':>9}{'side bets':>11}",
    ]
    for e in r.entries:
        d = e.doubling
        rr = f"{d.redouble_rate:>9.1%}" if d.redouble_rate is not None else f"{'-':>9}"
        lines.append(
            f"{e.label:<{width}}{d.doubles_per_hand:>9.2f}{d.double_rate:>8.1%}{d.doubled_per_hand:>9.2f}"
            f"{d.redoubles_per_hand:>11.2f}{rr}{signed(d.side_bet_gain.mean, 11, 2)}"
        )
    lines.append("  rate: share of its non-declarer turns with a double; per dbl: redoubles per double received;")
    lines.append("  side bets: settled minus raw score")
    return lines


def _head_to_head_lines(r: TournamentResult) -> list[str]:
    pairs, what = (r.head_to_head, "entries") if r.head_to_head else (r.head_to_head_instances, "instances")
    pw = column_width(f"{h.a} vs {h.b}" for h in pairs)
    lines = [
        "",
        f"Head to head ({what}): score difference per game, share of games and hands won",
        f"{'pair':<{pw}}{'diff':>8}{'s.e.':>7}  {'95% CI':<20}{'games':>7}{'hands':>8}",
    ]
    for h in pairs:
        e = h.difference
        pair = f"{h.a} vs {h.b}"
        lines.append(
            f"{pair:<{pw}}{signed(e.mean, 8)}{_se(e)}  {ci_text(e.ci95):<20}{h.games_won:>7.1%}{h.hands_won:>8.1%}"
        )
    return lines


def format_table(result: TournamentResult) -> str:
    """A readable report: scores, per-contract means, doubling, head to head."""
    r = result
    width = column_width([*r.labels, *(e.label for e in r.entries)], 12)
    return "\n".join(
        _header(r)
        + _score_lines(r, width)
        + _contract_lines(r, width)
        + _doubling_lines(r, width)
        + _head_to_head_lines(r)
    )


def format_comparison(c: Comparison) -> str:
    """A paired comparison (``compare``): the difference per game, at the table and in side bets."""
    se_note = "s.e. and 95% CI over deal sets" if c.deal_sets > 1 else "one deal set: no s.e."
    lines = [
        f"Paired comparison on the same deals and seats: {c.a} (first tournament) minus {c.b} (second)",
        f"Score difference per game ({se_note})",
        f"{'':<14}{'diff':>8}{'s.e.':>7}  95% CI",
    ]
    for what, e in (("score", c.difference), ("at the table", c.at_the_table), ("side bets", c.side_bets)):
        lines.append(f"{what:<14}{signed(e.mean, 8)}{_se(e)}  {ci_text(e.ci95)}".rstrip())
    return "\n".join(lines)


def progress_bar(total: int, unit: str, shown: bool, **options: Any) -> Any:
    """A tqdm bar on stderr counting ``total`` ``unit``\\ s (nothing shown unless ``shown``)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=not shown, dynamic_ncols=True, **options)


# ---------------------------------------------------------------------- plots


def pyplot(feature: str) -> ModuleType:
    """``matplotlib.pyplot`` drawing to files (the Agg backend); ``MissingExtraError``
    naming ``feature`` without the ``plot`` extra."""
    matplotlib = require("matplotlib", "plot", feature)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: The endings of the image files a plot is saved as (each drawn by matplotlib's Agg
#: backend and Pillow, both in the ``plot`` extra).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".eps", ".ps")


def plot_format(path: str | Path) -> str:
    """The image format of a plot file, from its ending (``"png"`` for ``x.png``); a
    ``ValueError`` naming the endings of ``PLOT_SUFFIXES`` for any other.

    >>> plot_format("results.PNG")
    'png'
    """
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        ending = quote(suffix) if suffix else "nothing"
        raise ValueError(f"{cut_text(str(path))}: a plot file ends in {', '.join(PLOT_SUFFIXES)}, not {ending}")
    return suffix[1:]


def save_figure(fig: Any, path: str | Path, dpi: int) -> Path:
    """Save ``fig`` as ``path`` (its format by ``plot_format``), whole or not at all, and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    try:
        image_format = plot_format(path)
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=image_format, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def style_axes(ax: Any, ylabel: str, title: str) -> None:
    """The house style of a bar chart: a light grid behind the bars, no top or right frame."""
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)


_ERROR_STYLE = {"elinewidth": 1, "ecolor": "0.25"}


def _contract_bars(ax: Any, entries: list[EntryStats], role: str, show_ci: bool, colors: Any) -> None:
    """Grouped bars: each entry's mean settled score per hand in each contract in ``role``."""
    x = np.arange(NUM_CONTRACTS)
    bar = 0.8 / len(entries)
    for i, e in enumerate(entries):
        est = getattr(e, role)
        means = [est[c].mean for c in CONTRACT_NAMES]
        err = None
        if show_ci:
            err = np.array(
                [
                    [est[c].mean - est[c].ci95[0] for c in CONTRACT_NAMES],
                    [est[c].ci95[1] - est[c].mean for c in CONTRACT_NAMES],
                ]
            )
        ax.bar(
            x + (i - (len(entries) - 1) / 2) * bar,
            means,
            bar * 0.92,
            yerr=err,
            capsize=3,
            color=colors[i % 10],
            label=e.label,
            error_kw=dict(_ERROR_STYLE),
        )
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.axvline(4.5, color="0.75", linewidth=0.8, linestyle=":")
    title = (
        "As declarer (one hand of each contract per game)"
        if role == "declarer"
        else "As defender (three hands of each contract per game)"
    )
    style_axes(ax, "mean settled score per hand", title)


def _score_bars(ax: Any, bars: list[tuple[str, Estimate, Any]], show_ci: bool) -> None:
    """One bar per (label, score per game, color), each written with its mean (and interval)."""
    xs = np.arange(len(bars))
    lows, highs = [0.0], [0.0]
    for x_, (_, score, color) in zip(xs, bars):
        low, high = score.ci95 if show_ci and score.ci95 is not None else (score.mean, score.mean)
        ax.bar(
            x_,
            score.mean,
            0.6,
            yerr=[[score.mean - low], [high - score.mean]] if show_ci else None,
            capsize=4,
            color=color,
            error_kw=dict(_ERROR_STYLE),
        )
        text = f"{score.mean:+.1f}" + (f"\n[{low:+.1f}, {high:+.1f}]" if show_ci and score.ci95 is not None else "")
        up = score.mean >= 0
        ax.annotate(
            text,
            (x_, high if up else low),
            xytext=(0, 4 if up else -4),
            textcoords="offset points",
            ha="center",
            va="bottom" if up else "top",
            fontsize=8.5,
        )
        lows.append(low)
        highs.append(high)
    span = max(max(highs) - min(lows), 20.0)
    ax.set_ylim(min(lows) - 0.18 * span, max(highs) + 0.18 * span)
    ax.set_xlim(-0.6, len(bars) - 0.4)
    ax.axhline(0, color="0.3", linewidth=0.8)
    tilt = len(bars) > 2
    ax.set_xticks(xs, [b[0] for b in bars], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    style_axes(ax, "mean score per game", "Score per game")


def plot_results(result: TournamentResult, path: str | Path) -> Path:
    """Per-contract mean settled score per entry, as declarer and as defender (grouped
    bars with 95% CI), and the mean score per game (± 95% CI) beside them; saved as PNG."""
    plt = pyplot("plot_results")
    r = result
    entries = r.entries
    colors = plt.get_cmap("tab10").colors
    fig = plt.figure(figsize=(13, 7.2), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(4.2, 1))
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0])]
    axes[1].sharex(axes[0])
    # 95% CIs need a few deal sets: with one or two, t is 12.7 or undefined and the bars say nothing.
    show_ci = r.deal_sets >= 3
    for ax, role in zip(axes, ("declarer", "defender")):
        _contract_bars(ax, entries, role, show_ci, colors)
    axes[1].set_xticks(np.arange(NUM_CONTRACTS), [label.replace(" (", "\n(") for label in CONTRACT_LABELS])
    axes[0].tick_params(labelbottom=False)
    axes[0].legend(frameon=False, ncols=min(len(entries), 4), loc="upper left")

    # Score per game: per entry, or per instance when all four agents are one entry.
    if len(entries) > 1:
        bars = [(e.label, e.score, colors[i % 10]) for i, e in enumerate(entries)]
    else:
        bars = [(inst.label, inst.score, colors[0]) for inst in r.instances]
    _score_bars(fig.add_subplot(grid[:, 1]), bars, show_ci)

    fig.suptitle(
        f"Barbu duplicate tournament: {' / '.join(r.labels)}\n"
        f"{r.games} games ({_count(r.deal_sets, 'deal set')} x 4 seatings), rules {r.rules_name}, seed {r.seed}; "
        + ("error bars: 95% CI over deal sets" if show_ci else "too few deal sets for error bars"),
        fontsize=11,
    )
    return save_figure(fig, path, 110)
