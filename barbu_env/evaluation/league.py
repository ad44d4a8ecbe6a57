"""Leagues: every pair of a list of agents played in duplicate, a score matrix and a rating.

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

Ratings
-------
One rating per agent in points per game, fitted by weighted least squares to the combined
margins of all pairings: margin(A, B) ≈ r_A - r_B, each pairing weighted by 1 / s.e.²,
with the ratings summing to zero. Why least squares on margins rather than Bradley–Terry:
Barbu's result is a score margin, not a win or a loss, and its size matters (a 600-point
beating is not a 5-point one); Bradley–Terry would keep only who won each deal set,
throwing that away, and would give ratings on a logit scale no-one reads at the table.
The additive model is the one that "score = own strength - the table's mean strength"
gives in every format (A x1 vs B x3: A scores 3/4 (r_A - r_B), each B -1/4 of it; two of
each: ±1/2 of it; the difference is r_A - r_B in both), so a rating difference reads as
"A outscores B by this many points per game when they share a table". Elo's sequential
updates are not used: a league is a fixed set of results, and a fit should not depend on
the order they were played in. The ratings' standard errors come from the weights
(the covariance of the constrained weighted fit, the pseudo-inverse of the weighted
Laplacian), inflated by sqrt(chi² / degrees of freedom) when the margins fit the additive
model worse than their standard errors allow (non-transitive results: A beats B beats C
beats A); chi² and its degrees of freedom are reported.

Caching
-------
With ``cache_dir``, each format of each pairing is saved there as a JSON file named by a
hash of what determines its games: the four agent specs in table order, the number of
deal sets, the seed, the rules (their values, not their name) and, for an agent given as
a checkpoint file (or folder) or a shipped policy (``ppo``), a hash of its content (also
for one named in a parameter: ``rollout=``, ``prior=``, ``worlds_from=``; each file is read
once per league, and only once its loader has taken it), so that a retrained checkpoint
at the same path, or a new shipped one, is played again; and
the version of barbu that played them, so that a new release (whose agents or engine may
play otherwise) plays everything again. A second run that adds one agent plays only the
formats of its new pairings. The key does not cover code changed without a new version
(a source checkout being edited) nor the versions of barbu's dependencies: after
changing an agent or the engine in place, use a fresh cache folder.

Each file holds the key, the result and a SHA-256 checksum of both (``_checksum``). A
file is used only if it is a JSON object of exactly these three, its checksum matches,
its key is the key asked for and its result has the shape that key implies (its format,
the four agents, one finite margin and score per deal set); any other file at that name
(edited, truncated, not JSON, another shape) is played again and overwritten, with a
``LeagueCacheWarning`` naming the file and what was wrong. The checksum detects edits and
damage, not forgery: anyone who can write the folder can write a consistent entry.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..agents import make_agent, parse_agent_spec
from ..agents.belief import SHIPPED as SHIPPED_BELIEF
from ..agents.belief import UNIFORM, model_path
from ..agents.pretrained import SHIPPED, pretrained_path
from ..agents.registry import AGENT_VALUED, BELIEF_VALUED, agent_identity, agent_names, is_path
from ..game.rules import Rules, load_rules
from ..util.files import InputError, OutputError, cut_text, quote, read_bytes, write_text
from ..util.json_layout import write_json
from .tournament import SEATINGS, Estimate, evaluate
from .tournament.report import cell, ci_text, column_width, progress_bar, pyplot, save_figure, signed
from .tournament.schedule import (
    agent_labels,
    check_games,
    check_seed,
    deal_sets,
    rules_name,
    seats_of_agents,
)
from .tournament.stats import rounded, set_means, won_share

#: The formats of a pairing {A, B}: name -> the four agents at the table in seating 0
#: (0 stands for A, 1 for B).
FORMATS: dict[str, tuple[int, int, int, int]] = {
    "1v3": (0, 1, 1, 1),
    "3v1": (1, 0, 0, 0),
    "2v2": (0, 1, 0, 1),
}
#: The same format seen from B's side (the matrix row of B against A).
MIRRORED = {"1v3": "3v1", "3v1": "1v3", "2v2": "2v2"}
#: Bumped when the cached files change meaning (2: a checksum in every file, barbu's
#: version in the key). Files of other versions have other names: they are not read.
CACHE_VERSION = 2
#: Two-sided 95% normal quantile (rating intervals).
Z95 = 1.959964


class LeagueCacheWarning(UserWarning):
    """A league cache file that cannot be trusted: its format of its pairing is played again."""


# ---------------------------------------------------------------------- one format of a pairing


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


def _format_result(fmt: str, spec_a: str, result: Any) -> FormatResult:
    """Per-deal-set margins of ``spec_a`` over the other agent from a tournament result
    (its ``specs`` and ``game_table``: in seating r, agent k sits in seat (k + r) % 4)."""
    specs = list(result.specs)
    is_a = np.array([s == spec_a for s in specs])
    rows = sorted(result.game_table, key=lambda g: g["game"])  # every game of every deal set
    by_seat = np.array([g["scores"] for g in rows], dtype=np.float64)
    scores = np.take_along_axis(by_seat, seats_of_agents([g["seating"] for g in rows]), axis=1)  # [G, agent]
    a_s, b_s = scores[:, is_a], scores[:, ~is_a]
    a_mean = a_s.mean(axis=1)
    margin = set_means(a_mean - b_s.mean(axis=1))
    return FormatResult(fmt, tuple(specs), margin, set_means(a_mean), len(rows), won_share(a_s, b_s))


# ---------------------------------------------------------------------- cache keys


def _content_hash(path: Path, hashes: dict[Path, str] | None = None) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names and bytes, in
    name order); read once per path where ``hashes`` (one league's) keeps them."""
    if hashes is None:
        return _read_hash(path)
    key = path.resolve()
    if key not in hashes:
        hashes[key] = _read_hash(path)
    return hashes[key]


def _read_hash(path: Path) -> str:
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if f is not path:
            digest.update(str(f.relative_to(path)).encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _spec_identity(spec: str, hashes: dict[Path, str] | None = None) -> dict[str, Any]:
    """What makes an agent spec play as it does, for cache keys: the registered name and
    its parameters (in name order), or a checkpoint's path and content hash; an agent
    named in a parameter (``rollout=``) as its own identity, a belief network's file
    (``worlds_from=``) with its content hash. ``trust`` (the opt-in to load a pickled
    file) is left out: it lets a file load, not play otherwise."""
    name, params = parse_agent_spec(spec)
    shown: dict[str, Any] = {}
    for key in sorted(params):
        value = params[key]
        if key in AGENT_VALUED and isinstance(value, str):
            value = _spec_identity(value, hashes)
        elif key in BELIEF_VALUED and isinstance(value, str) and value != UNIFORM:
            value = {"file": value, "sha256": _content_hash(model_path(value), hashes)}
        if key != "trust":
            shown[key] = value
    identity: dict[str, Any] = {"name": name, "params": shown}
    if name in SHIPPED:  # a shipped policy: its weights change with the package
        identity["sha256"] = _content_hash(pretrained_path(name), hashes)
    elif _is_file_agent(name):
        identity["sha256"] = _content_hash(Path(name), hashes)
    return identity


def _is_file_agent(name: str) -> bool:
    """Whether an agent spec's name is a file (a registered name is that agent, as make_agent reads it)."""
    return name not in agent_names() and is_path(name)


def _names_a_file(spec: str) -> bool:
    """Whether a spec's agent, or one named in its parameters, is a file, or it names a
    belief network's file: what ``_spec_identity`` reads the bytes of."""
    name, params = parse_agent_spec(spec)
    if _is_file_agent(name):
        return True
    for key, value in params.items():
        if key in AGENT_VALUED and isinstance(value, str) and _names_a_file(value):
            return True
        if key in BELIEF_VALUED and isinstance(value, str) and value not in (UNIFORM, SHIPPED_BELIEF):
            return True
    return False


def cache_key(
    specs: Sequence[str], games: int, seed: int, rules: Rules, hashes: dict[Path, str] | None = None
) -> dict[str, Any]:
    """The facts that determine a tournament's games (see the module docstring); ``hashes``
    keeps the files' hashes between the keys of one league."""
    return {
        "version": CACHE_VERSION,
        "barbu": __version__,
        "agents": [_spec_identity(s, hashes) for s in specs],
        "deal_sets": deal_sets(games),
        "seed": seed,
        "rules": rules.to_dict(),
    }


def _key_file(cache_dir: Path, key: dict[str, Any]) -> Path:
    text = json.dumps(key, sort_keys=True)
    return cache_dir / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"


def _checksum(key: Any, result: Any) -> str:
    """SHA-256 of a cache entry's key and result, as canonical JSON (sorted keys, no
    spaces): the same for the values written and for the values read back."""
    text = json.dumps({"key": key, "result": result}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


#: A cache entry is read only up to this many bytes, plus ``CACHE_BYTES_PER_SET`` per deal
#: set of its key: an entry holds its key (about 3 KB) and two numbers per deal set (about
#: 40 bytes). A larger file, a pipe or a device is not read (and is played again).
CACHE_READ_BASE = 64_000
CACHE_BYTES_PER_SET = 100


def _read_cached(path: Path, key: dict[str, Any], fmt: str, specs: Sequence[str]) -> tuple[FormatResult | None, str]:
    """(the cached result at ``path``, "") if the file there is a sound entry for ``key``
    (format ``fmt`` played by ``specs`` in table order); (None, "") if there is no file;
    (None, what is wrong with it) otherwise."""
    what = "league cache file"
    try:
        data = read_bytes(path, CACHE_READ_BASE + CACHE_BYTES_PER_SET * int(key["deal_sets"]), what)
    except FileNotFoundError:
        return None, ""
    except InputError as e:  # the message after the file's name: what is wrong with it
        return None, str(e).removeprefix(f"{what} {path}").lstrip(": ")
    try:
        entry = json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None, "is not JSON (truncated or overwritten?)"
    if not isinstance(entry, dict) or set(entry) != {"key", "result", "sha256"}:
        return None, "is not a cache entry (a JSON object of key, result and sha256)"
    try:
        if entry["sha256"] != _checksum(entry["key"], entry["result"]):
            return None, "does not match its checksum (edited or damaged)"
        if entry["key"] != json.loads(json.dumps(key)):
            return None, "holds the result of other games (its key is not this format's)"
        result = FormatResult.from_dict(entry["result"], cached=True)
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError):
        return None, "does not hold a format's result"
    n_sets = key["deal_sets"]
    sound = (
        result.format == fmt
        and result.specs == tuple(specs)
        and result.games == n_sets * SEATINGS
        and result.margin.shape == result.a_score.shape == (n_sets,)
        and bool(np.isfinite(result.margin).all() and np.isfinite(result.a_score).all())
        and math.isfinite(result.games_won)
        and 0.0 <= result.games_won <= 1.0
    )
    if not sound:
        return None, "does not hold a result of the shape its key implies"
    return result, ""


def _from_cache(path: Path, key: dict[str, Any], fmt: str, specs: Sequence[str], what: str) -> FormatResult | None:
    """``_read_cached``, with a ``LeagueCacheWarning`` (to ``run_league``'s caller) naming
    the file, the pairing ``what`` and what is wrong when there is a file it cannot use."""
    result, problem = _read_cached(path, key, fmt, specs)
    if problem:
        warnings.warn(
            f"league cache file {cut_text(str(path))} ({what}, {fmt}) {problem}: playing it again",
            LeagueCacheWarning,
            stacklevel=3,
        )
    return result


def _write_cached(path: Path, key: dict[str, Any], result: FormatResult) -> None:
    """Write a cache entry whole or not at all (an interrupted run or a full disk leaves no
    half-written file behind); ``OutputError`` naming the file when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        folder = cut_text(str(path.parent))
        raise OutputError(f"cannot make the league cache folder {folder}: {e.strerror or e}") from None
    key, values = json.loads(json.dumps(key)), result.to_dict()
    write_text(path, json.dumps({"key": key, "result": values, "sha256": _checksum(key, values)}, indent=1) + "\n")


# ---------------------------------------------------------------------- pairings and ratings


@dataclass
class Pairing:
    """Agents ``a`` and ``b`` (indices into the league's agents), their three formats."""

    a: int
    b: int
    formats: dict[str, FormatResult]  # by format name, seen from a

    @property
    def combined(self) -> Estimate:
        """Margin of a over b per game, the formats averaged deal set by deal set."""
        n = min(len(f.margin) for f in self.formats.values())
        return Estimate.of(np.mean([f.margin[:n] for f in self.formats.values()], axis=0))


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


# ---------------------------------------------------------------------- the league


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

    def order(self) -> list[int]:
        """Agents by rating, best first."""
        return sorted(range(len(self.specs)), key=lambda k: -self.ratings.rating[k])

    def to_dict(self) -> dict[str, Any]:
        r = self.ratings
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
                "rating": "weighted least squares of combined margins: margin(A, B) = r_A - r_B, sum of r = 0",
            },
            "ratings": [
                {
                    "label": self.labels[k],
                    "spec": self.specs[k],
                    "rating": rounded(r.rating[k]),
                    "se": None if r.se is None else rounded(r.se[k]),
                    "ci95": None if r.ci95(k) is None else [rounded(x) for x in r.ci95(k)],
                }
                for k in self.order()
            ],
            "fit": {"chi2": rounded(r.chi2), "dof": r.dof},
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


#: The most agents a league takes.
MAX_AGENTS = 64


def check_league_specs(specs: Sequence[str]) -> list[str]:
    """``specs`` as a list if a league can be made of them (two to ``MAX_AGENTS``, none
    listed twice), else a one-line ``ValueError``; no agent is made."""
    specs = list(specs)
    if len(specs) < 2:
        raise ValueError(f"a league needs at least two agents, got {quote(specs, 200)}")
    if len(set(specs)) != len(specs):
        counts = Counter(specs)
        again = [s for s in counts if counts[s] > 1]
        raise ValueError(f"agents are listed more than once: {quote(again, 200)}")
    if len(specs) > MAX_AGENTS:
        pairs = MAX_AGENTS * (MAX_AGENTS - 1) // 2
        raise ValueError(f"a league has at most {MAX_AGENTS} agents ({pairs:,} pairings), not {len(specs):,}")
    seen: dict[tuple, str] = {}
    for spec in specs:
        first = seen.setdefault(agent_identity(spec), spec)
        if first is not spec:
            raise ValueError(
                f"agents {quote(first, 120)} and {quote(spec, 120)} are one agent spelt two ways (the same name "
                "or file, the same parameters but for defaults, device and trust): list it once"
            )
    return specs


def run_league(
    specs: Sequence[str],
    games: int,
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    progress: bool = False,
    evaluate_fn: Callable[..., Any] = evaluate,
) -> LeagueResult:
    """Play every pairing of ``specs`` (two or more distinct agent specs: registered names
    with parameters, or checkpoint paths) in the three formats, ``games`` games each
    (rounded up to a multiple of 4), reading and writing ``cache_dir`` when given, and
    fit the ratings. ``workers`` and ``progress`` go to each tournament.
    ``evaluate_fn``: the tournament runner (``tournament.evaluate``; tests pass a
    counting one). A cache file that cannot be trusted is played again with a
    ``LeagueCacheWarning`` (see the module docstring). A cache file that cannot be
    written (a full disk) does not stop the league: no more are attempted, and the
    result's ``cache_not_saved`` says which file failed and why."""
    specs = check_league_specs(specs)
    games = check_games(games)  # before anything is played: a size no tournament could finish is refused
    check_seed(seed)
    rules_label = rules_name(rules)
    rules_obj = load_rules(rules)
    labels, _ = agent_labels(specs)
    cache = Path(cache_dir) if cache_dir is not None else None
    hashes: dict[Path, str] = {}  # each file read once in this league
    if cache is not None:
        for spec in specs:  # a file's bytes are hashed for the cache key: only once a loader takes it
            if _names_a_file(spec):
                make_agent(spec, rules=rules_obj)
    pairs = [(i, j) for i in range(len(specs)) for j in range(i + 1, len(specs))]
    played = cached = unsaved = 0
    cache_failure: str | None = None
    pairings = []
    with progress_bar(len(pairs) * len(FORMATS), "format", progress, desc="league") as bar:
        for i, j in pairs:
            # The pair in a fixed order (by spec), so that listing the agents in another order reuses the cache.
            a, b = (i, j) if specs[i] <= specs[j] else (j, i)
            formats = {}
            for name, table in FORMATS.items():
                table_specs = [(specs[a], specs[b])[x] for x in table]
                key = cache_key(table_specs, games, seed, rules_obj, hashes) if cache is not None else None
                path = _key_file(cache, key) if cache is not None else None
                what = f"{labels[a]} vs {labels[b]}"
                result = _from_cache(path, key, name, table_specs, what) if path is not None else None
                if result is None:
                    bar.set_postfix_str(f"{what} {name}")
                    t = evaluate_fn(
                        table_specs, games=games, seed=seed, rules=rules_obj, workers=workers, progress=progress
                    )
                    result = _format_result(name, specs[a], t)
                    played += 1
                    if path is not None and cache_failure is None:
                        try:
                            _write_cached(path, key, result)
                        except OutputError as e:
                            cache_failure = str(e)
                    if cache_failure is not None:
                        unsaved += 1
                else:
                    cached += 1
                formats[name] = result
                bar.update(1)
            pairings.append(Pairing(a, b, formats))
    ratings = fit_ratings(len(specs), [(p.a, p.b, p.combined) for p in pairings])
    n_games = deal_sets(games) * SEATINGS
    not_saved = None if cache_failure is None else f"{cache_failure}; {unsaved} pairing results not cached"
    return LeagueResult(
        specs, labels, n_games, seed, rules_obj, rules_label, pairings, ratings, played, cached, not_saved
    )


# ---------------------------------------------------------------------- text


def _rating_lines(r: LeagueResult, order: list[int], width: int) -> list[str]:
    lines = [
        "",
        "Ratings: points per game, least squares on the pairings' margins (sum zero); 95% interval",
        f"{'agent':<{width}}{'rating':>9}  {'95% CI':<20}",
    ]
    for k in order:
        lines.append(f"{r.labels[k]:<{width}}{signed(r.ratings.rating[k], 9)}  {ci_text(r.ratings.ci95(k)):<20}")
    if r.ratings.chi2 is not None and r.ratings.dof > 0:
        widened = r.ratings.chi2 > r.ratings.dof
        lines.append(
            f"  fit: chi2 {r.ratings.chi2:.1f} on {r.ratings.dof} degrees of freedom"
            + ("; the margins are less additive than their s.e. allow: intervals widened to match" if widened else "")
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
    """The ratings, then the matrix of combined margins (row over column, ± half the 95%
    interval), then each pairing's three formats."""
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
    return "\n".join(header + _rating_lines(r, order, width) + _matrix_lines(r, order, width) + _format_lines(r, order))


# ---------------------------------------------------------------------- plot


def plot_league(result: LeagueResult, path: str | Path) -> Path:
    """A heatmap of the combined margins (row over column, agents by rating, best at the
    top), each cell written with its mean and ± half its 95% interval, the ratings in the
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
    ax.set_yticks(range(k), [f"{r.labels[i]} ({r.ratings.rating[i]:+.0f})" for i in order])
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent (rating, points per game)")
    ax.set_title(f"League: margin per game of row over column\n{r.games} games per format x 3 formats, seed {r.seed}")
    fig.colorbar(image, ax=ax, label="points per game", shrink=0.8)
    return save_figure(fig, path, 120)
