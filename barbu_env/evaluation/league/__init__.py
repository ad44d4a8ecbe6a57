"""Leagues: every pair of a list of agents played in duplicate, a score matrix, standings and ratings.

``run_league(["random", "heuristic", "pimc"], games=100)`` plays, for every unordered pair
{A, B} of the agents, three duplicate tournaments (``tournament.evaluate``) of ``games``
games each, one per *format*:

==========  ========================  =================================================
format      table (seating 0)         what it asks
==========  ========================  =================================================
``1v3``     A, B, B, B                A alone against three Bs
``3v1``     B, A, A, A                B alone against three As
``2v2``     A, B, A, B                two of each, every player between two of the
                                      other kind
==========  ========================  =================================================

Why A, B, A, B for two of each: with the agents alternating, all four instances sit
alike (the other kind on both sides, its own kind opposite), every trick is played
A, B, A, B or B, A, B, A, so neither kind gains from playing behind its own kind, and the
table is the same table whichever agent is listed first (B, A, B, A is one of its
rotations). A, A, B, B would give the two instances of a kind different neighbours (one
plays after its twin, the other after an opponent), a mixture the 1v3 and 3v1 formats
already cover from both sides.

Every format of every pairing is played with the same ``seed``, so on the same deal sets
(``tournament.deal_set`` depends on the seed alone): the whole league is duplicate, the
three formats of a pairing are paired deal set by deal set, and each pairing's combined
margin is the mean of its three formats taken per deal set (so its standard error counts
the correlation the shared cards give).

The league is built on the tournament package's pieces: its checks before play
(``tournament.schedule``), its estimates over deal sets (``tournament.stats``:
``Estimate``, ``set_means``, ``won_share``) and its report helpers (``tournament.report``:
the JSON layout, the table cells, the plot setup).

Scores
------
The *margin* of A over B in a format is the per-game difference of A's average score and
B's average score (``tournament.HeadToHead``), per deal set; its mean, standard error and
95% interval are over deal sets. The matrix is antisymmetric: B over A is minus A over B.

Standings and ratings
---------------------
A head-to-head result is *significant* when the combined margin's 95% interval excludes
zero. The league's order (``LeagueResult.standings``, ``fit.standings``) is taken from
those results alone: every significant result points down the list, agents whose
significant results form a cycle (A beats B beats C beats A: no order agrees with them
all) share one rank and the cycle is named (``fit.cycle_in``), and agents no result
orders are placed by rating. An agent's rating (``LeagueResult.field``) is its mean
margin per game over the league's other agents, with its 95% interval over deal sets;
it is shown only where it agrees with the significant results (``LeagueResult.unrated``),
and ``LeagueResult.contradicted`` checks what is shown against them (it is empty).

Beside them, the one-number model is tested: weighted least squares of the combined
margins, margin(A, B) ≈ r_A - r_B, each pairing weighted by 1 / s.e.² (``fit_ratings``),
its chi² on pairings - (agents - 1) degrees of freedom and p-value; below 0.05 the league
warns that the margins are not additive. It is the model "score = own strength - the
table's mean strength" gives in every format, and it fails where strong agents meet weak
ones: the margin against a weak agent measures how hard one punishes blunders, and an
agent that crushes the weak would outrank one that beats it (measured in
docs/evaluation.md, where the choice of the mean margin over Nash averaging is too).
Why margins rather than Bradley–Terry: Barbu's result is a score margin, and its size
matters; Elo's sequential updates would make a fixed set of results depend on the order
they were played in.

Caching
-------
With ``cache_dir``, each format of each pairing is saved there, keyed by the agents'
identities, the bytes of their checkpoints and code, the deal sets, the seed, the rules
and barbu's version (``league.cache``): a second run that adds one agent plays only its
new pairings, and an agent whose code or weights changed is played again.

Layout: ``results`` (what was played, ``LeagueResult``), ``fit`` (standings and ratings),
``cache``, ``report`` (the table and the heatmap); this module plays the league.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...agents.registry import AgentSpec, specs_of
from ...game.rules import Rules, load_rules
from ...util.files import OutputError
from ..tournament import SEATINGS, evaluate
from ..tournament.report import progress_bar
from ..tournament.schedule import agent_labels, check_games, check_seed, deal_sets, rules_name
from .cache import Cache
from .fit import Ratings, fit_ratings
from .report import format_league, plot_league
from .results import FORMATS, MIRRORED, FormatResult, LeagueResult, Pairing, format_result

__all__ = [
    "FORMATS",
    "MIRRORED",
    "FormatResult",
    "LeagueResult",
    "Pairing",
    "Ratings",
    "check_league_specs",
    "fit_ratings",
    "format_league",
    "plot_league",
    "run_league",
]


def check_league_specs(specs: Sequence[str | AgentSpec] | str) -> list[AgentSpec]:
    """The agents as specs if a league can be made of them (two or more, no agent listed
    twice however it is spelt: ``AgentSpec.identity``), else a one-line ``ValueError``."""
    specs = specs_of(specs)
    if len(specs) < 2:
        raise ValueError(f"a league needs at least two agents, got {len(specs)}")
    seen: dict[str, AgentSpec] = {}
    for spec in specs:
        first = seen.setdefault(spec.identity, spec)
        if first is not spec:
            raise ValueError(f"agents {str(first)!r} and {str(spec)!r} are one agent: list it once")
    return specs


def run_league(
    specs: Sequence[str | AgentSpec] | str,
    games: int,
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    progress: bool = False,
    evaluate_fn: Callable[..., Any] = evaluate,
) -> LeagueResult:
    """Play every pairing of ``specs`` (two or more distinct agents) in the three formats,
    ``games`` games each (rounded up to a multiple of 4), reading and writing ``cache_dir``
    when given, and fit the one-number model. ``workers`` and ``progress`` go to each tournament;
    ``evaluate_fn`` is the tournament runner (``tournament.evaluate``). A cache file that
    cannot be written (a full disk) does not stop the league: no more are attempted, and
    the result's ``cache_not_saved`` says which failed and why."""
    specs = check_league_specs(specs)
    games = check_games(games)
    check_seed(seed)
    rules_label, rules = rules_name(rules), load_rules(rules)
    labels, _ = agent_labels(specs)
    cache = Cache(cache_dir) if cache_dir is not None else None
    pairs = [(i, j) for i in range(len(specs)) for j in range(i + 1, len(specs))]
    played = cached = unsaved = 0
    cache_failure: str | None = None
    pairings = []
    with progress_bar(len(pairs) * len(FORMATS), "format", progress, desc="league") as bar:
        for i, j in pairs:
            # The pair in a fixed order, so that listing the agents in another order reuses the cache.
            a, b = (i, j) if specs[i].identity <= specs[j].identity else (j, i)
            formats = {}
            for name, table in FORMATS.items():
                table_specs = [(specs[a], specs[b])[x] for x in table]
                key = cache.key(table_specs, games, seed, rules) if cache is not None else None
                result = cache.read(key) if cache is not None else None
                if result is None:
                    bar.set_postfix_str(f"{labels[a]} vs {labels[b]} {name}")
                    t = evaluate_fn(
                        table_specs, games=games, seed=seed, rules=rules, workers=workers, progress=progress
                    )
                    result = format_result(name, str(specs[a]), t)
                    played += 1
                    if cache is not None and cache_failure is None:
                        try:
                            cache.write(key, result.to_dict())
                        except OSError as e:
                            cache_failure = (
                                str(e) if isinstance(e, OutputError) else f"league cache {cache.folder}: {e}"
                            )
                    unsaved += cache_failure is not None
                else:
                    cached += 1
                formats[name] = result
                bar.update(1)
            pairings.append(Pairing(a, b, formats))
    ratings = fit_ratings(len(specs), [(p.a, p.b, p.combined) for p in pairings])
    not_saved = None if cache_failure is None else f"{cache_failure}; {unsaved} pairing results not cached"
    texts = [str(s) for s in specs]
    n_games = deal_sets(games) * SEATINGS
    return LeagueResult(texts, labels, n_games, seed, rules, rules_label, pairings, ratings, played, cached, not_saved)
