"""Duplicate tournaments: how well four agents play Barbu against each other.

Luck of the cards dominates a single game of Barbu, so agents are compared the way
duplicate bridge compares players: on the same cards.

Deal sets and seatings
----------------------
A *deal set* is a whole game's chance: the 28 deals and the first declarer, drawn from
``numpy.random.default_rng([seed, set_index, 0])``. Each deal set is played four times,
once per cyclic *seating* r = 0..3: agent k (its position in ``--agents``) sits in seat
``(k + r) % 4``. ``--games N`` counts games, so N is rounded up to a multiple of 4 and
there are N / 4 deal sets.

Why cyclic rotations suffice: over the four seatings of a deal set, agent k sits in seat
(k + r) % 4 for r = 0, 1, 2, 3, which is every seat exactly once (the seatings form a
Latin square: each seating is a permutation, and each agent visits each seat once). The
deals and the first declarer belong to the seats, so every agent meets every hand of
every deal, and every declarer turn, from every seat, exactly as each other agent does.
That removes the luck of the cards from the comparison, which is what duplicate play is
for. What the cyclic rotations keep fixed is the circular order of the agents (agent
k + 1 always sits on agent k's left); the 24 permutations would also vary who sits
beside whom, at six times the cost, and matter only when agents of different kinds sit
at the same table and exploit their neighbours differently.

Seeds and determinism
---------------------
The agent in seat s of seating r of deal set i is built with ``make_agent(spec,
seed=agent_seed(seed, i, r, s), rules=rules)`` (agents that play by the point values read
``rules``; the others ignore it): the seed depends only on the game and the seat, not on
the process or the order of play, so a tournament is reproducible for a seed whatever
the number of worker processes. The seating is part of the seed on purpose: with a seed
per deal set and seat alone, two seatings that put the same specs in the same seats
(all four of them for ``random,random,random,random``, half of them for ``A,B,A,B``)
would replay the very same game, wasting those games and reporting a spread of zero;
the common random numbers that sharing would give otherwise help little, since a game
takes another course at the first decision where two agents differ.

Agents are built afresh for every game (``make_agent`` with the game's seeds); a loader
of trained checkpoints should cache what it reads from disk so that building is cheap.

Playing fast
------------
Deal sets are split into jobs of up to 16 (cut the same way whatever the number of
workers) played by a ``ProcessPoolExecutor`` (``workers=1`` plays in this process); a
tqdm bar on stderr counts games. Jobs are made as they are handed out, at most
``JOBS_IN_FLIGHT_PER_WORKER`` per worker waiting or running at a time, so a tournament
starts at once whatever its size. A job's games, up to 64, step together on one batched
engine (``barbu_env.vector.VectorBarbu``, the numba kernels behind ``barbu_env.env()``):
each game is loaded at its first decision, and at each step the decisions of all its
live games go to one call of ``agents.act_rows``, which asks each group of rows at once
(see ``barbu_env/agents/base.py``); each agent gets exactly the observation dict
``barbu_env.env()`` would give it (a test checks this), and every decision is put to
its agent, forced ones included, as in the environment. Agents sharing what they
decide with (trained policies loaded from one file: one network; heuristic agents under
the same rules: one compiled kernel) are ``GroupAgent``\\ s asked together through
``act_group``, each instance drawing its own action with its own generator; other
agents with ``act_batch`` answer for their rows in one call (the random agent's draws,
from its own generator, are exactly those of ``act`` row by row), the rest through
``act``. Hand results come from the engine's record of each finished hand; a game
record (``records_dir``) is made by replaying the game's actions on a ``BarbuState``,
for the recorded games only. ``play_games`` plays the same loop and gives every game's
``BarbuState``.

Sizes
-----
``games`` runs from 1 to ``MAX_GAMES`` (ten million); anything else is refused before a
game is played (``check_games``). Every game's results (``GameData``, one row per game,
and the per-game table of the result) are kept until the statistics are taken, about
10 KB per game at the peak, so the statistics of N games need O(N) memory whatever the
scheduling: the maximum needs about 100 GB, and a larger size could not be summed up.

Statistics
----------
Agents given by the same spec form one *entry* (``heuristic,random,random,random`` has two
entries, ``heuristic`` and ``random``, the latter with three *instances* ``random#1``..``#3``).
The four games of a deal set are correlated (same cards), so every standard error is
taken over deal sets: per deal set the entry's scores are averaged over its four games
and its instances, and the mean and standard error are those of these per-set averages;
the 95% confidence interval uses Student's t with (deal sets - 1) degrees of freedom.

Per entry: mean score per game; share of games finished first (ties shared); mean settled
score per hand in each contract as declarer and as defender (raw too, in the JSON);
doubling: doubles made per hand, the share of its non-declarer doubling turns in which
it doubled someone, times doubled per hand, redoubles per hand, redoubles per double
received, and the side-bet gain per hand (settled minus raw). Head to head, for each pair
of entries: the mean per-game difference of their average scores, the share of games and
of hands in which one beats the other (each instance against each, ties counting half).
With only one entry the head-to-head table is given per instance.

>>> r = evaluate(["random"] * 4, games=4, seed=3, workers=1)
>>> r.games, r.deal_sets, [e.label for e in r.entries], r.entries[0].score.mean  # zero-sum game
(4, 1, ['random'], 0.0)
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from barbu_env.actions import AGENTS, DOUBLE_OFFSET, NUM_ACTIONS, PASS_ACTION, action_text
from barbu_env.agents import Agent, act_rows, agent_names, make_agent, parse_agent_spec
from barbu_env.agents.base import group_ids
from barbu_env.agents.registry import spec_without
from barbu_env.engine import (
    CONTRACT_NAMES,
    NUM_CONTRACTS,
    NUM_HANDS,
    NUM_PLAYERS,
    BarbuState,
    IllegalActionError,
)
from barbu_env.extras import require
from barbu_env.position import Positions
from barbu_env.records import GameRecord
from barbu_env.rules import Rules, load_rules
from barbu_env.vector import VectorBarbu

#: Games per deal set: one per cyclic seating.
SEATINGS = NUM_PLAYERS
#: SeedSequence stream tags: deals and agents draw from disjoint streams of a deal set.
_DEAL_STREAM, _AGENT_STREAM = 0, 1
#: Short contract names for tables and plots, in Contract order.
CONTRACT_LABELS = ("No Tricks", "No Hearts", "No Queens", "Barbu", "No Last Two", "Trumps", "Domino")
SEATING_RULE = "cyclic: in seating r, agent k sits in seat (k + r) % 4"
#: The most games a tournament may be asked for: every game's results stay in memory until
#: the statistics are taken (about 10 KB per game, so about 100 GB at the maximum).
MAX_GAMES = 10_000_000
#: Jobs handed to the worker processes at a time, per worker: enough to keep each busy
#: while the results of the last one are collected, never the whole tournament at once.
JOBS_IN_FLIGHT_PER_WORKER = 2


def check_games(games: int) -> int:
    """``games`` if a tournament can be asked for it (a whole number from 1 to
    ``MAX_GAMES``); otherwise ``ValueError`` saying why.

    >>> check_games(100)
    100
    >>> check_games(10**12)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: games must be at most 10,000,000 (...), not 1,000,000,000,000
    """
    if isinstance(games, bool) or not isinstance(games, (int, np.integer)):
        raise ValueError(f"games must be a whole number, not {games!r}")
    if games < 1:
        raise ValueError(f"games must be at least 1, not {games}")
    if games > MAX_GAMES:
        raise ValueError(
            f"games must be at most {MAX_GAMES:,} (every game's results are kept in memory, about 10 KB each), "
            f"not {games:,}"
        )
    return int(games)


# ---------------------------------------------------------------------- deal sets and seating


def deal_set(seed: int, index: int) -> tuple[int, list[list[list[int]]]]:
    """The first declarer and the 28 deals (four sorted lists of 13 card ids each) of deal
    set ``index`` of a tournament seeded ``seed``."""
    rng = np.random.default_rng([seed, index, _DEAL_STREAM])
    first_declarer = int(rng.integers(NUM_PLAYERS))
    deals = [np.sort(rng.permutation(52).reshape(NUM_PLAYERS, 13), axis=1).tolist() for _ in range(NUM_HANDS)]
    return first_declarer, deals


def seating(rotation: int) -> tuple[int, ...]:
    """The agent (index into the agent list) in each seat in seating ``rotation``.

    >>> seating(0), seating(1)
    ((0, 1, 2, 3), (3, 0, 1, 2))
    """
    return tuple((seat - rotation) % NUM_PLAYERS for seat in range(NUM_PLAYERS))


def agent_seed(seed: int, set_index: int, rotation: int, seat: int) -> int:
    """Seed of the agent in ``seat`` in seating ``rotation`` of deal set ``set_index``."""
    return int(np.random.SeedSequence([seed, set_index, _AGENT_STREAM, rotation, seat]).generate_state(1)[0])


def agent_labels(specs: Sequence[str]) -> tuple[list[str], list[str]]:
    """(entry label of each spec, instance label of each agent): a checkpoint path is
    labelled by its file name; a spec given more than once is numbered; the opt-in to load
    a pickled file (``trust=true``) is not shown.

    >>> agent_labels(["heuristic", "random", "random", "runs/a/model.zip:trust=true"])
    (['heuristic', 'random', 'random', 'model.zip'], ['heuristic', 'random#1', 'random#2', 'model.zip'])
    """
    names: dict[str, str] = {}
    for spec in specs:
        if spec not in names:
            shown = spec_without(spec, "trust")
            short = Path(shown).name if ("/" in shown or os.sep in shown) else shown
            names[spec] = next(n for n in (short, shown, spec) if n == spec or n not in names.values())
    entry = [names[s] for s in specs]
    counts = {s: specs.count(s) for s in specs}
    seen: dict[str, int] = {}
    instance = []
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        instance.append(names[spec] if counts[spec] == 1 else f"{names[spec]}#{seen[spec]}")
    return entry, instance


# ---------------------------------------------------------------------- playing one game


@dataclass
class PlayedGame:
    """A finished game and the doubles made in it."""

    state: BarbuState
    doubles: np.ndarray  # int8 [28, 4, 4]: [h, i, j] = 1 if seat i doubled seat j in hand h, 2 if it redoubled


def play_game(agents: Sequence[Agent], rules: Rules, first_declarer: int, deals: Sequence) -> PlayedGame:
    """Play one game with ``agents[seat]`` choosing for each seat, every decision put to
    its agent as ``barbu_env.env()`` would put it (same observation dict, same agent
    name)."""
    return play_games([agents], rules, [first_declarer], [deals])[0]


def play_games(
    agent_sets: Sequence[Sequence[Agent]], rules: Rules, first_declarers: Sequence[int], deals: Sequence[Sequence]
) -> list[PlayedGame]:
    """Play several games together, game g with ``agent_sets[g][seat]`` in each seat and
    hand h dealt ``deals[g][h]`` (hands without a deal dealt as ``BarbuState.new_game``
    deals them from ``numpy.random.default_rng(0)``).

    The games step together on the batched engine (``_play_batch``): at every step the
    decisions of all live games are put in one call to ``agents.act_rows`` (row i: the
    observation and mask of one game's seat to act, its agent, and that seat's agent
    name). Each game's ``BarbuState`` is then rebuilt from its actions."""
    rules = load_rules(rules)
    states = [_new_state(rules, f, d) for f, d in zip(first_declarers, deals)]
    batch = _play_batch(agent_sets, states, rules)
    return [PlayedGame(_replay(state, batch.history(g)), batch.doubles[g]) for g, state in enumerate(states)]


def _new_state(rules: Rules, first_declarer: int, deals: Sequence) -> BarbuState:
    """A game at its first decision; every hand not in ``deals`` dealt from ``default_rng(0)``."""
    return BarbuState.new_game(rules, rng=np.random.default_rng(0), first_declarer=first_declarer, deals=deals)


def _replay(state: BarbuState, actions: Sequence[int]) -> BarbuState:
    """``state`` (left as it is) played on with ``actions``: a new state."""
    state = state.clone()
    for action in actions:
        state.apply_action(action)
    return state


@dataclass
class _Batch:
    """What games played together came to, game g in row g (seats absolute)."""

    scores: np.ndarray  # int32 [G, 4] final score of each seat
    declarer: np.ndarray  # int16 [G, 28] seat declaring each hand
    contract: np.ndarray  # int16 [G, 28] contract index of each hand
    raw: np.ndarray  # int32 [G, 28, 4] raw hand scores per seat
    settled: np.ndarray  # int32 [G, 28, 4] settled hand scores per seat
    doubles: np.ndarray  # int8 [G, 28, 4, 4] see PlayedGame.doubles
    actions: np.ndarray  # int8 [T, G]: game g's actions are actions[: lengths[g], g]
    lengths: np.ndarray  # int64 [G] decisions of each game

    def history(self, g: int) -> list[int]:
        """Every action of game ``g``, in order."""
        return self.actions[: self.lengths[g], g].tolist()


def _play_batch(agent_sets: Sequence[Sequence[Agent]], states: Sequence[BarbuState], rules: Rules) -> _Batch:
    """Play the games that start at ``states`` (fresh games under ``rules``, left as they
    are) to their end on one ``VectorBarbu``, game g with ``agent_sets[g][seat]`` in each
    seat.

    All games start together and each step takes one decision of every live game, so
    game g's step t is its decision t. At every step the live games' decisions go to
    one ``act_rows`` call, rows in game order, each row's observation and mask (int8)
    exactly what ``barbu_env.env()`` gives that seat; a game that has ended is reset by
    the engine and stepped with its first legal action until all have ended, its new
    game ignored. Hand results come from the engine's record of each finished hand,
    doubles from the doubling actions (a double, or a redouble of a seat that had named
    the actor)."""
    n = len(states)
    env = VectorBarbu(n, rules=rules, seed=0, copy=False)
    obs, masks, seat = env.load(Positions.concatenate([Positions.from_state(s) for s in states]))
    scores = np.zeros((n, NUM_PLAYERS), dtype=np.int32)
    declarer = np.zeros((n, NUM_HANDS), dtype=np.int16)
    contract = np.zeros((n, NUM_HANDS), dtype=np.int16)
    raw = np.zeros((n, NUM_HANDS, NUM_PLAYERS), dtype=np.int32)
    settled = np.zeros((n, NUM_HANDS, NUM_PLAYERS), dtype=np.int32)
    doubles = np.zeros((n, NUM_HANDS, NUM_PLAYERS, NUM_PLAYERS), dtype=np.int8)
    lengths = np.zeros(n, dtype=np.int64)
    steps: list[np.ndarray] = []
    groups = group_ids([a for agents in agent_sets for a in agents]).reshape(n, NUM_PLAYERS)  # fixed: numbered once
    live = np.arange(n)
    while len(live):
        seats = seat[live]
        seat_list = seats.tolist()
        everyone = len(live) == n  # then the engine's own buffers, as good as copies until the next step
        rows_obs = obs if everyone else obs[live]
        rows_mask = (masks if everyone else masks[live]).view(np.int8)
        agents = [agent_sets[g][s] for g, s in zip(live.tolist(), seat_list)]
        names = [AGENTS[s] for s in seat_list]
        chosen = act_rows(agents, rows_obs, rows_mask, names, groups[live, seats])
        if everyone:
            actions = chosen
        else:
            actions = masks.argmax(axis=1)  # games that have ended: any legal action, their new game is not ours
            actions[live] = chosen
        doubling = (chosen >= DOUBLE_OFFSET) & (chosen < PASS_ACTION)
        if doubling.any():  # doubling never ends a hand: the hand under way is the doubles' hand
            games, actor, named = live[doubling], seats[doubling], chosen[doubling] - DOUBLE_OFFSET
            hand, named_by = env.hand_numbers()[games], env.named()[games]
            for k in range(3):
                target = (actor + 1 + k) % NUM_PLAYERS
                redouble = (named_by[np.arange(len(games)), target] >> actor) & 1
                hit = ((named >> k) & 1).astype(bool)
                doubles[games[hit], hand[hit], actor[hit], target[hit]] = 1 + redouble[hit]
        try:
            obs, masks, seat, _, dones, infos = env.step(actions)
        except IllegalActionError:  # nothing was applied: name the agent
            _raise_illegal(chosen, rows_mask, agents, seat_list)
            raise
        steps.append(actions.astype(np.int8))
        over = live[infos["hand_over"][live]]
        if len(over):
            last = env.last_hands()
            hand = last["hand"][over]
            declarer[over, hand] = last["declarer"][over]
            contract[over, hand] = last["contract"][over]
            raw[over, hand] = last["raw"][over]
            settled[over, hand] = last["settled"][over]
        ended = dones[live]
        if ended.any():
            done = live[ended]
            scores[done] = infos["final_scores"][done]
            lengths[done] = infos["game_length"][done]
            live = live[~ended]
    return _Batch(scores, declarer, contract, raw, settled, doubles, np.array(steps, dtype=np.int8), lengths)


def _raise_illegal(actions: np.ndarray, masks: np.ndarray, agents: Sequence[Agent], seats: Sequence[int]) -> None:
    """Raise ``IllegalActionError`` naming the agent and seat of the first row whose
    action is not legal under its mask, if there is one."""
    valid = (actions >= 0) & (actions < NUM_ACTIONS)
    legal = valid & (masks[np.arange(len(actions)), np.where(valid, actions, 0)] > 0)
    if legal.all():
        return
    row = int(np.argmin(legal))
    action, agent = int(actions[row]), agents[row]
    name = getattr(agent, "name", type(agent).__name__)
    what = f"{action} ({action_text(action)})" if valid[row] else repr(action)
    options = ", ".join(f"{a} ({action_text(a)})" for a in np.flatnonzero(masks[row]).tolist())
    raise IllegalActionError(f"agent {name!r} in seat {seats[row]}: illegal action {what}; legal actions: {options}")


# ---------------------------------------------------------------------- the worker


@dataclass(frozen=True)
class _Job:
    """Deal sets [start, stop) of a tournament, for one worker call."""

    specs: tuple[str, ...]
    labels: tuple[str, ...]
    rules: Rules
    seed: int
    start: int
    stop: int
    record_games: int  # games with an index below this are returned as records


@dataclass
class GameData:
    """Per-game arrays of a tournament (seats absolute), games in index order."""

    game: np.ndarray  # [G] game index: deal_set * 4 + seating
    first_declarer: np.ndarray  # [G]
    scores: np.ndarray  # [G, 4] final score of each seat
    declarer: np.ndarray  # [G, 28] seat declaring each hand
    contract: np.ndarray  # [G, 28] contract index of each hand
    raw: np.ndarray  # [G, 28, 4] raw hand scores per seat
    settled: np.ndarray  # [G, 28, 4] settled hand scores per seat
    doubles: np.ndarray  # [G, 28, 4, 4] see PlayedGame.doubles

    @property
    def deal_set(self) -> np.ndarray:
        return self.game // SEATINGS

    @property
    def rotation(self) -> np.ndarray:
        return self.game % SEATINGS

    @classmethod
    def concat(cls, parts: Sequence[GameData]) -> GameData:
        fields = cls.__dataclass_fields__
        merged = cls(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in fields})
        order = np.argsort(merged.game, kind="stable")
        return cls(**{f: getattr(merged, f)[order] for f in fields})


def _play_job(job: _Job) -> tuple[GameData, list[tuple[int, GameRecord]]]:
    """Play the four seatings of each deal set of ``job`` together (``_play_batch``);
    the records of its games below ``job.record_games`` replay their actions."""
    games = []  # (set_index, rotation, seeds, agents, state) of every game of the job
    for set_index in range(job.start, job.stop):
        first_declarer, deals = deal_set(job.seed, set_index)
        state = _new_state(job.rules, first_declarer, deals)  # the four seatings share the start
        for rotation in range(SEATINGS):
            who = seating(rotation)
            seeds = [agent_seed(job.seed, set_index, rotation, seat) for seat in range(NUM_PLAYERS)]
            agents = [
                make_agent(job.specs[who[seat]], seed=seeds[seat], rules=job.rules) for seat in range(NUM_PLAYERS)
            ]
            games.append((set_index, rotation, seeds, agents, state))
    batch = _play_batch([g[3] for g in games], [g[4] for g in games], job.rules)
    index = np.array([s * SEATINGS + r for s, r, *_ in games], dtype=np.int64)
    data = GameData(
        game=index,
        first_declarer=np.array([g[4].first_declarer for g in games], dtype=np.int16),
        scores=batch.scores,
        declarer=batch.declarer,
        contract=batch.contract,
        raw=batch.raw,
        settled=batch.settled,
        doubles=batch.doubles,
    )
    records = []
    for g, (set_index, rotation, seeds, _, start) in enumerate(games):
        if index[g] >= job.record_games:
            continue
        who = seating(rotation)
        metadata = {
            "tournament_seed": job.seed,
            "deal_set": set_index,
            "seating": rotation,
            "game": int(index[g]),
            "specs": [job.specs[w] for w in who],
            "agent_seeds": seeds,
        }
        state = _replay(start, batch.history(g))
        records.append((int(index[g]), GameRecord.from_state(state, [job.labels[w] for w in who], metadata)))
    return data, records


# ---------------------------------------------------------------------- statistics

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
_T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t95(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom: a table to
    30, then the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), exact to 1e-3.

    >>> t95(10), round(t95(120), 3)
    (2.228, 1.98)
    """
    if df <= len(_T95):
        return _T95[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


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
        return {"mean": _r(self.mean), "se": _r(self.se), "ci95": [_r(x) for x in self.ci95] if self.ci95 else None}


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
        d = {k: _r(v) for k, v in self.__dict__.items() if k != "side_bet_gain"}
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
            "first_place_share": _r(self.first_place),
            "per_contract": {
                c: {
                    "declarer": {**self.declarer[c].to_dict(), "raw_mean": _r(self.declarer_raw[c])},
                    "defender": {**self.defender[c].to_dict(), "raw_mean": _r(self.defender_raw[c])},
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
            "first_place_share": _r(self.first_place),
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
            "games_won_share": _r(self.games_won),
            "hands_won_share": _r(self.hands_won),
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
    game_table: list[dict[str, Any]]  # per game: deal set, seating, seats, scores
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
        text = _json_text(self.to_dict(timing)) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text


def _json_text(value: Any, depth: int = 0, key: str = "") -> str:
    """Indented JSON in which a value that fits in 100 characters (and every game row)
    stays on one line."""
    import json

    flat = json.dumps(value)
    if not isinstance(value, (dict, list)) or not value:
        return flat
    if depth > 0 and (len(flat) <= 100 or key == "games[]"):
        return flat
    pad = "  " * depth
    if isinstance(value, dict):
        items = [f"{pad}  {json.dumps(k)}: {_json_text(v, depth + 1, k)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    items = [f"{pad}  {_json_text(v, depth + 1, key + '[]')}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{pad}]"


def _r(x: float | None) -> float | None:
    """A float rounded for JSON (None and NaN as None)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), 4)


def summarize(specs: Sequence[str], data: GameData, seed: int, rules: Rules, rules_name: str) -> TournamentResult:
    """The statistics of a tournament from its per-game arrays."""
    specs = list(specs)
    entry_labels, labels = agent_labels(specs)
    g_count = len(data.game)
    n_sets = g_count // SEATINGS
    games = np.arange(g_count)
    # seat_of[g, k]: seat of agent k in game g.
    seat_of = (np.arange(NUM_PLAYERS)[None, :] + data.rotation[:, None]) % NUM_PLAYERS
    score = np.take_along_axis(data.scores, seat_of, axis=1).astype(np.float64)  # [G, K]
    per_hand = seat_of[:, None, :]
    settled = np.take_along_axis(data.settled, np.broadcast_to(per_hand, data.settled.shape), axis=2)
    raw = np.take_along_axis(data.raw, np.broadcast_to(per_hand, data.raw.shape), axis=2)
    is_declarer = data.declarer[:, :, None] == per_hand  # [G, H, K]
    # Doubling counts per seat, then per agent.
    made = (data.doubles == 1).sum(axis=3)  # [G, H, seat]: doubles made
    redoubled = (data.doubles == 2).sum(axis=3)
    received = (data.doubles == 1).sum(axis=2)  # [G, H, seat]: players doubling the seat
    made, redoubled, received = (
        np.take_along_axis(x, np.broadcast_to(per_hand, x.shape), axis=2) for x in (made, redoubled, received)
    )
    top = score == score.max(axis=1, keepdims=True)
    first_share = top / top.sum(axis=1, keepdims=True)

    def per_set(num: np.ndarray, den: np.ndarray, members: list[int]) -> np.ndarray:
        """Per deal set, sum(num) / sum(den) over its four games and ``members``."""
        n = num[:, members].reshape(n_sets, -1).sum(axis=1)
        d = den[:, members].reshape(n_sets, -1).sum(axis=1)
        return n / np.maximum(d, 1)

    ones = np.ones_like(score)
    entries = []
    for spec in dict.fromkeys(specs):
        members = [k for k, s in enumerate(specs) if s == spec]
        decl, defn, decl_raw, defn_raw = {}, {}, {}, {}
        for c, name in enumerate(CONTRACT_NAMES):
            in_c = data.contract[:, :, None] == c
            for role_mask, est, raw_mean in ((is_declarer, decl, decl_raw), (~is_declarer, defn, defn_raw)):
                m = in_c & role_mask
                den = m.sum(axis=1)
                est[name] = Estimate.of(per_set((settled * m).sum(axis=1), den, members))
                raw_mean[name] = float((raw * m)[:, :, members].sum() / max(den[:, members].sum(), 1))
        not_decl = ~is_declarer[:, :, members]
        doubled_me = received[:, :, members].sum()
        doubling = Doubling(
            doubles_per_hand=float(made[:, :, members].mean()),
            double_rate=float(((made[:, :, members] > 0) & not_decl).sum() / max(not_decl.sum(), 1)),
            doubled_per_hand=float(received[:, :, members].mean()),
            redoubles_per_hand=float(redoubled[:, :, members].mean()),
            redouble_rate=float(redoubled[:, :, members].sum() / doubled_me) if doubled_me else None,
            side_bet_gain=Estimate.of(per_set((settled - raw).sum(axis=1), np.full_like(score, NUM_HANDS), members)),
        )
        entries.append(
            EntryStats(
                label=entry_labels[members[0]],
                spec=spec,
                instances=members,
                score=Estimate.of(per_set(score, ones, members)),
                first_place=float(first_share[:, members].mean()),
                declarer=decl,
                defender=defn,
                declarer_raw=decl_raw,
                defender_raw=defn_raw,
                doubling=doubling,
            )
        )
    instances = [
        InstanceStats(labels[k], specs[k], k, Estimate.of(per_set(score, ones, [k])), float(first_share[:, k].mean()))
        for k in range(NUM_PLAYERS)
    ]

    def versus(a: list[int], b: list[int], name_a: str, name_b: str) -> HeadToHead:
        diff = score[:, a].mean(axis=1) - score[:, b].mean(axis=1)
        won_games = [(score[:, i] > score[:, j]) + 0.5 * (score[:, i] == score[:, j]) for i in a for j in b]
        won_hands = [
            (settled[:, :, i] > settled[:, :, j]) + 0.5 * (settled[:, :, i] == settled[:, :, j]) for i in a for j in b
        ]
        return HeadToHead(
            name_a,
            name_b,
            Estimate.of(diff.reshape(n_sets, -1).mean(axis=1)),
            float(np.mean(won_games)),
            float(np.mean(won_hands)),
            g_count,
        )

    h2h = [versus(x.instances, y.instances, x.label, y.label) for i, x in enumerate(entries) for y in entries[i + 1 :]]
    h2h_inst = [versus([i], [j], labels[i], labels[j]) for i in range(NUM_PLAYERS) for j in range(i + 1, NUM_PLAYERS)]
    game_table = [
        {
            "game": int(data.game[g]),
            "deal_set": int(data.deal_set[g]),
            "seating": int(data.rotation[g]),
            "first_declarer": int(data.first_declarer[g]),
            "seats": [labels[k] for k in seating(int(data.rotation[g]))],
            "scores": data.scores[g].tolist(),
        }
        for g in games
    ]
    return TournamentResult(
        specs, labels, seed, rules, rules_name, g_count, n_sets, entries, instances, h2h, h2h_inst, game_table
    )


# ---------------------------------------------------------------------- the tournament


def evaluate(
    agents: Sequence[str],
    games: int,
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    workers: int | None = None,
    progress: bool = False,
    records_dir: str | Path | None = None,
    record_games: int | None = None,
) -> TournamentResult:
    """Run a duplicate tournament of four agents (registered names or checkpoint paths,
    repeats allowed) over ``games`` games (rounded up to a multiple of 4).

    ``workers``: processes (default ``os.cpu_count()``; 1 plays in this process).
    ``records_dir``: save game records there as ``game_00000.json`` ...: every game, or the
    first ``record_games``. ``progress``: a tqdm bar on stderr."""
    import time

    from tqdm import tqdm

    specs = tuple(agents)
    if len(specs) != NUM_PLAYERS:
        raise ValueError(f"a tournament takes exactly 4 agents (repeats allowed), got {len(specs)}: {list(specs)}")
    games = check_games(games)
    known = set(agent_names())
    for spec in specs:
        name, params = parse_agent_spec(spec)
        if name not in known and not Path(name).exists():
            raise ValueError(
                f"unknown agent {spec!r}: registered agents are {sorted(known)}, or give a checkpoint path"
            )
        if params:
            make_agent(spec, rules=rules)  # a parameter it does not take, or a bad value, is an error now
    if seed < 0:
        raise ValueError(f"seed must be non-negative, not {seed}")
    rules_name = rules if isinstance(rules, str) else ("standard" if rules is None else "custom")
    rules = load_rules(rules)
    n_sets = -(-games // SEATINGS)
    if records_dir is not None:
        records_dir = Path(records_dir)
        records_dir.mkdir(parents=True, exist_ok=True)
        record_games = n_sets * SEATINGS if record_games is None else record_games
    else:
        record_games = 0
    workers = max(1, min(workers or os.cpu_count() or 1, n_sets))
    # Jobs of up to 16 deal sets (64 games played in lockstep), cut the same way whatever
    # the number of workers, so that batched agents see the same batches; made as they are
    # handed out, not all at once.
    chunk = max(1, min(16, -(-n_sets // 16)))
    _, labels = agent_labels(specs)
    jobs = (
        _Job(specs, tuple(labels), rules, seed, a, min(a + chunk, n_sets), record_games)
        for a in range(0, n_sets, chunk)
    )
    digits = max(5, len(str(n_sets * SEATINGS - 1)))

    parts: list[GameData] = []
    saved = 0
    start = time.perf_counter()

    def collect(result: tuple[GameData, list[tuple[int, GameRecord]]], bar: tqdm) -> None:
        nonlocal saved
        data, records = result
        parts.append(data)
        for index, record in records:
            record.save(records_dir / f"game_{index:0{digits}d}.json")
            saved += 1
        bar.update(len(data.game))

    if workers == 1:
        with tqdm(total=n_sets * SEATINGS, unit="game", disable=not progress, dynamic_ncols=True) as bar:
            for job in jobs:
                collect(_play_job(job), bar)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            # The first jobs are submitted before the bar's thread starts, so the workers start first.
            pending = {
                pool.submit(_play_job, job) for job in itertools.islice(jobs, workers * JOBS_IN_FLIGHT_PER_WORKER)
            }
            try:
                with tqdm(total=n_sets * SEATINGS, unit="game", disable=not progress, dynamic_ncols=True) as bar:
                    while pending:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        # Refill first, so the workers play on while the results are collected.
                        pending |= {pool.submit(_play_job, job) for job in itertools.islice(jobs, len(done))}
                        for future in done:
                            collect(future.result(), bar)
            except BaseException:  # an agent's error or Ctrl-C: drop the chunks not started
                pool.shutdown(cancel_futures=True)
                raise
    seconds = time.perf_counter() - start

    result = summarize(specs, GameData.concat(parts), seed, rules, rules_name)
    result.run = {
        "workers": workers,
        "seconds": round(seconds, 3),
        "games_per_second": round(result.games / seconds, 2) if seconds > 0 else None,
        "records_dir": str(records_dir) if records_dir is not None else None,
        "records_saved": saved,
    }
    return result


# ---------------------------------------------------------------------- text


def _pm(x: float | None, width: int = 7, digits: int = 1) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:+{width}.{digits}f}"


def _ci(e: Estimate) -> str:
    return "" if e.ci95 is None else f"[{e.ci95[0]:+.1f}, {e.ci95[1]:+.1f}]"


def format_table(result: TournamentResult) -> str:
    """A readable report: scores, per-contract means, doubling, head to head."""
    r = result
    width = max(12, *(len(x) for x in r.labels), *(len(e.label) for e in r.entries)) + 2
    lines = [
        f"Duplicate tournament: {r.games} games = {r.deal_sets} deal sets x {SEATINGS} seatings; "
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

    se_note = "s.e. and 95% CI over deal sets" if r.deal_sets > 1 else "one deal set: no s.e."
    lines += [
        "",
        f"Score per game ({se_note})",
        f"{'entry':<{width}}{'mean':>8}{'s.e.':>7}  {'95% CI':<20}{'1st place':>10}",
    ]

    def score_row(label: str, e: Estimate, first: float, indent: str = "") -> str:
        se = f"{e.se:7.1f}" if e.se is not None else f"{'-':>7}"
        return f"{indent + label:<{width}}{_pm(e.mean, 8)}{se}  {_ci(e):<20}{first:>9.1%}"

    for e in r.entries:
        lines.append(score_row(e.label, e.score, e.first_place))
        if len(e.instances) > 1:
            for k in e.instances:
                inst = r.instances[k]
                lines.append(score_row(inst.label, inst.score, inst.first_place, "  "))

    heads = ("NoTricks", "NoHearts", "NoQueens", "Barbu", "NoLast2", "Trumps", "Domino")
    lines += [
        "",
        "Mean settled score per hand by contract (as declarer: one hand per game; as defender: three)",
        f"{'entry':<{width}}{'role':<10}" + "".join(f"{h:>10}" for h in heads),
    ]
    for e in r.entries:
        for role, est in (("declarer", e.declarer), ("defender", e.defender)):
            label = e.label if role == "declarer" else ""
            lines.append(f"{label:<{width}}{role:<10}" + "".join(f"{_pm(est[c].mean, 10)}" for c in CONTRACT_NAMES))

    lines += [
        "",
        "Doubling, per hand",
        f"{'entry':<{width}}{'doubles':>9}{'rate':>8}{'doubled':>9}{'redoubles':>11}{'per dbl':>9}{'side bets':>11}",
    ]
    for e in r.entries:
        d = e.doubling
        rr = f"{d.redouble_rate:>9.1%}" if d.redouble_rate is not None else f"{'-':>9}"
        lines.append(
            f"{e.label:<{width}}{d.doubles_per_hand:>9.2f}{d.double_rate:>8.1%}{d.doubled_per_hand:>9.2f}"
            f"{d.redoubles_per_hand:>11.2f}{rr}{_pm(d.side_bet_gain.mean, 11, 2)}"
        )
    lines.append("  rate: share of its non-declarer turns with a double; per dbl: redoubles per double received;")
    lines.append("  side bets: settled minus raw score")

    pairs, what = (r.head_to_head, "entries") if r.head_to_head else (r.head_to_head_instances, "instances")
    pw = max(len(f"{h.a} vs {h.b}") for h in pairs) + 2
    lines += [
        "",
        f"Head to head ({what}): score difference per game, share of games and hands won",
        f"{'pair':<{pw}}{'diff':>8}{'s.e.':>7}  {'95% CI':<20}{'games':>7}{'hands':>8}",
    ]
    for h in pairs:
        e = h.difference
        se = f"{e.se:7.1f}" if e.se is not None else f"{'-':>7}"
        pair = f"{h.a} vs {h.b}"
        lines.append(f"{pair:<{pw}}{_pm(e.mean, 8)}{se}  {_ci(e):<20}{h.games_won:>7.1%}{h.hands_won:>8.1%}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- plot


def plot_results(result: TournamentResult, path: str | Path) -> Path:
    """Per-contract mean settled score per entry, as declarer and as defender (grouped
    bars with 95% CI), and the mean score per game (± 95% CI) beside them; saved as PNG."""
    matplotlib = require("matplotlib", "plot", "plot_results")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = result
    entries = r.entries
    colors = plt.get_cmap("tab10").colors
    fig = plt.figure(figsize=(13, 7.2), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(4.2, 1))
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0])]
    axes[1].sharex(axes[0])
    # 95% CIs need a few deal sets: with one or two, t is 12.7 or undefined and the bars say nothing.
    show_ci = r.deal_sets >= 3
    x = np.arange(NUM_CONTRACTS)
    bar = 0.8 / len(entries)
    for ax, role in zip(axes, ("declarer", "defender")):
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
                error_kw={"elinewidth": 1, "ecolor": "0.25"},
            )
        ax.axhline(0, color="0.3", linewidth=0.8)
        ax.axvline(4.5, color="0.75", linewidth=0.8, linestyle=":")
        ax.set_ylabel("mean settled score per hand")
        title = (
            "As declarer (one hand of each contract per game)"
            if role == "declarer"
            else "As defender (three hands of each contract per game)"
        )
        ax.set_title(title, loc="left", fontsize=11)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
    axes[1].set_xticks(x, CONTRACT_LABELS)
    axes[0].tick_params(labelbottom=False)
    axes[0].legend(frameon=False, ncols=min(len(entries), 4), loc="upper left")

    side = fig.add_subplot(grid[:, 1])
    # Score per game: per entry, or per instance when all four agents are one entry.
    if len(entries) > 1:
        bars = [(e.label, e.score, colors[i % 10]) for i, e in enumerate(entries)]
    else:
        bars = [(inst.label, inst.score, colors[0]) for inst in r.instances]
    xs = np.arange(len(bars))
    lows, highs = [0.0], [0.0]
    for x_, (_, score, color) in zip(xs, bars):
        low, high = score.ci95 if show_ci and score.ci95 is not None else (score.mean, score.mean)
        side.bar(
            x_,
            score.mean,
            0.6,
            yerr=[[score.mean - low], [high - score.mean]] if show_ci else None,
            capsize=4,
            color=color,
            error_kw={"elinewidth": 1, "ecolor": "0.25"},
        )
        text = f"{score.mean:+.1f}" + (f"\n[{low:+.1f}, {high:+.1f}]" if show_ci and score.ci95 is not None else "")
        up = score.mean >= 0
        side.annotate(
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
    side.set_ylim(min(lows) - 0.18 * span, max(highs) + 0.18 * span)
    side.set_xlim(-0.6, len(bars) - 0.4)
    side.axhline(0, color="0.3", linewidth=0.8)
    tilt = len(bars) > 2
    side.set_xticks(xs, [b[0] for b in bars], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    side.set_ylabel("mean score per game")
    side.set_title("Score per game", loc="left", fontsize=11)
    side.grid(axis="y", alpha=0.3)
    side.set_axisbelow(True)
    side.spines[["top", "right"]].set_visible(False)

    fig.suptitle(
        f"Barbu duplicate tournament: {' / '.join(r.labels)}\n"
        f"{r.games} games ({r.deal_sets} deal sets x 4 seatings), rules {r.rules_name}, seed {r.seed}; "
        + ("error bars: 95% CI over deal sets" if show_ci else "too few deal sets for error bars"),
        fontsize=11,
    )
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = [
    "CONTRACT_LABELS",
    "MAX_GAMES",
    "EntryStats",
    "Estimate",
    "GameData",
    "HeadToHead",
    "InstanceStats",
    "PlayedGame",
    "TournamentResult",
    "agent_labels",
    "agent_seed",
    "check_games",
    "deal_set",
    "evaluate",
    "format_table",
    "play_game",
    "play_games",
    "plot_results",
    "seating",
    "summarize",
    "t95",
]
