"""A tournament's statistics: estimates over deal sets and what each entry, instance and
pair of entries did.

Contract: ``summarize`` turns a tournament's per-game arrays (``play.GameData``, every
game of every deal set) into a ``TournamentResult``; it is a pure function of them, and
its numbers are those documented in the package docstring (``barbu_env.evaluation.tournament``,
"Statistics"): every standard error and 95% interval is taken over deal sets, the four
games of a deal set being correlated. ``Estimate``, ``t95``, ``set_means`` and
``won_share`` are the pieces other comparisons built on tournaments (the league) use.
The ``to_dict`` methods give plain JSON values, rounded to 4 decimals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from barbu_env.game.constants import CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS
from barbu_env.game.rules import Rules
from barbu_env.util.json_layout import write_json

from .schedule import SEATING_RULE, SEATINGS, agent_labels, seating, seats_of_agents

if TYPE_CHECKING:
    from barbu_env.agents.registry import AgentSpec

    from .play import GameData


def _coverage(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    odd = df % 2
    term = series = math.cos(theta) if odd else 1.0
    for k in range(2 + odd, df - 1, 2):
        term *= (k - 1) / k * c2
        series += term
    if not odd:
        return math.sin(theta) * series
    return 2 / math.pi * (theta + (math.sin(theta) * series if df > 1 else 0.0))


def t95(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom: to 30, the exact
    quantile (a bisection on ``_coverage``) rounded to 3 decimals, as tables print it; then
    the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), exact to 1e-3.

    >>> t95(10), round(t95(120), 3)
    (2.228, 1.98)
    """
    if df > 30:
        z = 1.959964
        return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    low, high = 0.0, 13.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _coverage(mid, df) < 0.95 else (low, mid)
    return round(high, 3)


@dataclass(frozen=True)
class Estimate:
    """A mean over deal sets with its standard error and 95% confidence interval (None
    where a single deal set gives no spread)."""

    mean: float
    se: float | None
    ci95: tuple[float, float] | None
    n: int  # deal sets

    @classmethod
    def of(cls, per_set: np.ndarray) -> Estimate:
        per_set = np.asarray(per_set, dtype=np.float64)
        n = len(per_set)
        mean = float(per_set.mean())
        if n < 2:
            return cls(mean, None, None, n)
        se = float(per_set.std(ddof=1) / math.sqrt(n))
        h = t95(n - 1) * se
        return cls(mean, se, (mean - h, mean + h), n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": rounded(self.mean),
            "se": rounded(self.se),
            "ci95": [rounded(x) for x in self.ci95] if self.ci95 else None,
        }

    def __neg__(self) -> Estimate:
        """The estimate of minus the quantity (the other side's margin).

        >>> -Estimate(5.0, 1.0, (3.0, 7.0), 4)
        Estimate(mean=-5.0, se=1.0, ci95=(-7.0, -3.0), n=4)
        """
        return Estimate(-self.mean, self.se, None if self.ci95 is None else (-self.ci95[1], -self.ci95[0]), self.n)


def set_means(per_game: np.ndarray) -> np.ndarray:
    """[S] the mean of each deal set's four games, from values per game [G] in game index
    order (game g of deal set g // 4).

    >>> set_means(np.array([1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 4.0])).tolist()
    [2.5, 1.0]
    """
    per_game = np.asarray(per_game)
    return per_game.reshape(len(per_game) // SEATINGS, -1).mean(axis=1)


def won_share(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the comparisons of ``a[..., i]`` with ``b[..., j]`` (every i, every j, every
    index of the leading axes) that ``a`` wins, ties counting half.

    >>> won_share(np.array([[3], [1]]), np.array([[1, 3], [1, 2]]))  # (1 + 0.5) + (0.5 + 0)
    0.5
    """
    a, b = np.asarray(a)[..., :, None], np.asarray(b)[..., None, :]
    return float(np.mean((a > b) + 0.5 * (a == b)))


@dataclass
class Doubling:
    """Doubling habits of an entry (pooled over its instances and games)."""

    doubles_per_hand: float  # doubles it made per hand
    double_rate: float  # share of its non-declarer doubling turns in which it doubled someone
    doubled_per_hand: float  # players doubling it per hand
    redoubles_per_hand: float  # redoubles it made per hand
    redouble_rate: float | None  # redoubles made per double received (None if never doubled)
    side_bet_gain: Estimate  # settled minus raw score, per hand

    def to_dict(self) -> dict[str, Any]:
        d = {k: rounded(v) for k, v in self.__dict__.items() if k != "side_bet_gain"}
        d["side_bet_gain_per_hand"] = self.side_bet_gain.to_dict()
        return d


@dataclass
class EntryStats:
    """One entry: all agents given by one spec."""

    label: str
    spec: str
    instances: list[int]  # indices into the agent list
    score: Estimate  # per game
    first_place: float  # share of games finished first, ties shared
    declarer: dict[str, Estimate]  # contract -> mean settled score per hand as declarer
    defender: dict[str, Estimate]  # contract -> as defender
    declarer_raw: dict[str, float]
    defender_raw: dict[str, float]
    doubling: Doubling

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.spec,
            "instances": self.instances,
            "score_per_game": self.score.to_dict(),
            "first_place_share": rounded(self.first_place),
            "per_contract": {
                c: {
                    "declarer": {**self.declarer[c].to_dict(), "raw_mean": rounded(self.declarer_raw[c])},
                    "defender": {**self.defender[c].to_dict(), "raw_mean": rounded(self.defender_raw[c])},
                }
                for c in CONTRACT_NAMES
            },
            "doubling": self.doubling.to_dict(),
        }


@dataclass
class InstanceStats:
    """One agent of the list (one seat-instance)."""

    label: str
    spec: str
    index: int
    score: Estimate
    first_place: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.spec,
            "index": self.index,
            "score_per_game": self.score.to_dict(),
            "first_place_share": rounded(self.first_place),
        }


@dataclass
class HeadToHead:
    """``a`` against ``b`` over all games (both sit in every game)."""

    a: str
    b: str
    difference: Estimate  # per game: a's average score minus b's
    games_won: float  # share of (game, a-instance, b-instance) where a scored more, ties half
    hands_won: float  # the same per hand, on settled scores
    games: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "score_difference_per_game": self.difference.to_dict(),
            "games_won_share": rounded(self.games_won),
            "hands_won_share": rounded(self.hands_won),
            "games": self.games,
        }


@dataclass
class TournamentResult:
    """What ``evaluate`` found; ``to_dict``/``to_json`` for files, ``format_table`` for people."""

    specs: list[str]
    labels: list[str]  # instance labels
    seed: int
    rules: Rules
    rules_name: str
    games: int
    deal_sets: int
    entries: list[EntryStats]
    instances: list[InstanceStats]
    head_to_head: list[HeadToHead]
    head_to_head_instances: list[HeadToHead]
    game_table: list[dict[str, Any]]  # per game: deal set, seating, seats, scores, side bets
    run: dict[str, Any] = field(default_factory=dict)  # workers, seconds, games per second, records

    def to_dict(self, timing: bool = True) -> dict[str, Any]:
        """Plain JSON values. ``timing=False`` leaves out the ``run`` section (wall time,
        workers), so that two runs with one seed give identical dicts."""
        d = {
            "tournament": {
                "agents": self.specs,
                "labels": self.labels,
                "games": self.games,
                "deal_sets": self.deal_sets,
                "seed": self.seed,
                "rules_name": self.rules_name,
                "rules": self.rules.to_dict(),
                "seating": SEATING_RULE,
                "agent_seeds": "agent_seed(seed, deal_set, seating, seat)",
            },
            "entries": [e.to_dict() for e in self.entries],
            "instances": [i.to_dict() for i in self.instances],
            "head_to_head": [h.to_dict() for h in self.head_to_head],
            "head_to_head_instances": [h.to_dict() for h in self.head_to_head_instances],
            "games": self.game_table,
        }
        if timing:
            d["run"] = self.run
        return d

    def to_json(self, path: str | Path | None = None, timing: bool = True) -> str:
        """JSON text, indented, with short values and each game on one line; written to
        ``path`` if given."""
        return write_json(self.to_dict(timing), path)


def rounded(x: float | None) -> float | None:
    """A float rounded for JSON (None and NaN as None)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), 4)


# ---------------------------------------------------------------------- summarize


@dataclass
class _ByAgent:
    """A tournament's per-game arrays by agent: column k is agent k (its position in the
    agent list), whatever seat it had in the game."""

    score: np.ndarray  # float64 [G, K] final score
    settled: np.ndarray  # [G, H, K] settled hand scores
    raw: np.ndarray  # [G, H, K] raw hand scores
    contract: np.ndarray  # [G, H] contract index of each hand
    is_declarer: np.ndarray  # bool [G, H, K]
    made: np.ndarray  # [G, H, K] doubles made
    redoubled: np.ndarray  # [G, H, K] redoubles made
    received: np.ndarray  # [G, H, K] players doubling the agent
    first_share: np.ndarray  # [G, K] share of first place (ties shared)

    @classmethod
    def of(cls, data: GameData) -> _ByAgent:
        seat_of = seats_of_agents(data.rotation)  # [G, K]
        per_hand = seat_of[:, None, :]

        def by_agent(x: np.ndarray) -> np.ndarray:  # [G, H, seat] -> [G, H, K]
            return np.take_along_axis(x, np.broadcast_to(per_hand, x.shape), axis=2)

        score = np.take_along_axis(data.scores, seat_of, axis=1).astype(np.float64)
        top = score == score.max(axis=1, keepdims=True)
        return cls(
            score=score,
            settled=by_agent(data.settled),
            raw=by_agent(data.raw),
            contract=data.contract,
            is_declarer=data.declarer[:, :, None] == per_hand,
            made=by_agent((data.doubles == 1).sum(axis=3)),
            redoubled=by_agent((data.doubles == 2).sum(axis=3)),
            received=by_agent((data.doubles == 1).sum(axis=2)),
            first_share=top / top.sum(axis=1, keepdims=True),
        )

    def per_set(self, num: np.ndarray, den: np.ndarray, members: list[int]) -> np.ndarray:
        """Per deal set, sum(num) / sum(den) over its four games and ``members``."""
        n_sets = len(num) // SEATINGS
        n = num[:, members].reshape(n_sets, -1).sum(axis=1)
        d = den[:, members].reshape(n_sets, -1).sum(axis=1)
        return n / np.maximum(d, 1)

    def score_estimate(self, members: list[int]) -> Estimate:
        """Mean score per game of ``members``, over deal sets."""
        return Estimate.of(self.per_set(self.score, np.ones_like(self.score), members))


def _per_contract(v: _ByAgent, members: list[int]) -> tuple[dict, dict, dict, dict]:
    """(as declarer, as defender, the same raw): per contract, ``members``' mean settled
    score per hand over deal sets, and the mean raw score per hand."""
    decl, defn, decl_raw, defn_raw = {}, {}, {}, {}
    for c, name in enumerate(CONTRACT_NAMES):
        in_c = v.contract[:, :, None] == c
        for role_mask, est, raw_mean in ((v.is_declarer, decl, decl_raw), (~v.is_declarer, defn, defn_raw)):
            m = in_c & role_mask
            den = m.sum(axis=1)
            est[name] = Estimate.of(v.per_set((v.settled * m).sum(axis=1), den, members))
            raw_mean[name] = float((v.raw * m)[:, :, members].sum() / max(den[:, members].sum(), 1))
    return decl, defn, decl_raw, defn_raw


def _doubling(v: _ByAgent, members: list[int]) -> Doubling:
    """The doubling habits of ``members``, pooled."""
    not_decl = ~v.is_declarer[:, :, members]
    made, redoubled, received = v.made[:, :, members], v.redoubled[:, :, members], v.received[:, :, members]
    doubled_me = received.sum()
    side_bets = (v.settled - v.raw).sum(axis=1)
    return Doubling(
        doubles_per_hand=float(made.mean()),
        double_rate=float(((made > 0) & not_decl).sum() / max(not_decl.sum(), 1)),
        doubled_per_hand=float(received.mean()),
        redoubles_per_hand=float(redoubled.mean()),
        redouble_rate=float(redoubled.sum() / doubled_me) if doubled_me else None,
        side_bet_gain=Estimate.of(v.per_set(side_bets, np.full_like(v.score, NUM_HANDS), members)),
    )


def _entry(v: _ByAgent, spec: str, members: list[int], label: str) -> EntryStats:
    decl, defn, decl_raw, defn_raw = _per_contract(v, members)
    return EntryStats(
        label=label,
        spec=spec,
        instances=members,
        score=v.score_estimate(members),
        first_place=float(v.first_share[:, members].mean()),
        declarer=decl,
        defender=defn,
        declarer_raw=decl_raw,
        defender_raw=defn_raw,
        doubling=_doubling(v, members),
    )


def _versus(v: _ByAgent, a: list[int], b: list[int], name_a: str, name_b: str) -> HeadToHead:
    """Agents ``a`` (together) against agents ``b``."""
    diff = v.score[:, a].mean(axis=1) - v.score[:, b].mean(axis=1)
    return HeadToHead(
        name_a,
        name_b,
        Estimate.of(set_means(diff)),
        won_share(v.score[:, a], v.score[:, b]),
        won_share(v.settled[:, :, a], v.settled[:, :, b]),
        len(diff),
    )


def _game_table(data: GameData, labels: Sequence[str]) -> list[dict[str, Any]]:
    """Per game: its index, deal set, seating, first declarer, who sat where, the scores and
    the side bets in them (settled minus raw, per seat)."""
    side_bets = (data.settled - data.raw).sum(axis=1)
    return [
        {
            "game": int(data.game[g]),
            "deal_set": int(data.deal_set[g]),
            "seating": int(data.rotation[g]),
            "first_declarer": int(data.first_declarer[g]),
            "seats": [labels[k] for k in seating(int(data.rotation[g]))],
            "scores": data.scores[g].tolist(),
            "side_bets": side_bets[g].tolist(),
        }
        for g in range(len(data.game))
    ]


def summarize(specs: Sequence[AgentSpec], data: GameData, seed: int, rules: Rules, rules_name: str) -> TournamentResult:
    """The statistics of a tournament from its per-game arrays (every game of every deal
    set, in game index order)."""
    specs = list(specs)
    texts = [str(s) for s in specs]
    entry_labels, labels = agent_labels(specs)
    v = _ByAgent.of(data)
    entries = []
    for spec in dict.fromkeys(specs):
        members = [k for k, s in enumerate(specs) if s == spec]
        entries.append(_entry(v, texts[members[0]], members, entry_labels[members[0]]))
    instances = [
        InstanceStats(labels[k], texts[k], k, v.score_estimate([k]), float(v.first_share[:, k].mean()))
        for k in range(NUM_PLAYERS)
    ]
    h2h = [
        _versus(v, x.instances, y.instances, x.label, y.label) for i, x in enumerate(entries) for y in entries[i + 1 :]
    ]
    h2h_inst = [
        _versus(v, [i], [j], labels[i], labels[j]) for i in range(NUM_PLAYERS) for j in range(i + 1, NUM_PLAYERS)
    ]
    g_count = len(data.game)
    return TournamentResult(
        texts,
        labels,
        seed,
        rules,
        rules_name,
        g_count,
        g_count // SEATINGS,
        entries,
        instances,
        h2h,
        h2h_inst,
        _game_table(data, labels),
    )
