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

Every agent meets every hand of every deal, and every declarer turn, from every seat
(docs/evaluation.md: why cyclic rotations suffice).

Seeds and determinism
---------------------
The agent in seat s of seating r of deal set i is built with ``make_agent(spec,
seed=agent_seed(seed, i, r, s), rules=rules)`` (agents that play by the point values read
``rules``; the others ignore it): the seed depends only on the game and the seat, not on
the process or the order of play, so a tournament is reproducible for a seed whatever
the number of worker processes. The seating is part of the seed, so that
two seatings with the same specs in the same seats do not replay the same game.

Agents are built afresh for every game (``make_agent`` with the game's seeds); a loader
of trained checkpoints should cache what it reads from disk so that building is cheap.

Playing fast
------------
Deal sets are split into jobs of up to 16 (``schedule.jobs``, cut the same way whatever
the number of workers) played by a ``ProcessPoolExecutor`` (``workers=1`` plays in this
process), at most ``JOBS_IN_FLIGHT_PER_WORKER`` jobs per worker at a time. A job's games
step together on one batched engine (``barbu_env.game.driver.play``): each agent gets
exactly the observation dict ``barbu_env.env()`` would give it, at every decision, forced
ones included; agents with an equal ``batch_key`` are asked in one ``act_batch`` call
(``driver.act_rows``). ``play_games`` plays the same loop and gives every game's ``BarbuState``.

Sizes
-----
``games`` is at least 1 (``check_games``). Every game's results (``GameData``) are kept
until the statistics are taken: memory in proportion to the games (docs/evaluation.md).

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

Modules
-------
``schedule`` (sizes, checks, deal sets, seatings, seeds, labels, jobs), ``play`` (the
play loop and a worker's job), ``stats`` (the statistics), ``compare`` (two tournaments on
the same deals, paired: one agent against another put in its place) and ``report`` (the
tables and the plot); every name documented here is importable from this package, whose
``evaluate`` hands the jobs to the workers and summarizes the games. The league
(``barbu_env.evaluation.league``) builds on the same pieces.

>>> r = evaluate(["random"] * 4, games=4, seed=3, workers=1)
>>> r.games, r.deal_sets, [e.label for e in r.entries], r.entries[0].score.mean  # zero-sum game
(4, 1, ['random'], 0.0)
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from barbu_env.agents.registry import AgentSpec, specs_of
from barbu_env.evaluation.records import GameRecord
from barbu_env.game.constants import NUM_PLAYERS
from barbu_env.game.rules import Rules, load_rules
from barbu_env.util.files import OutputError

from .compare import Comparison, compare
from .play import GameData, PlayedGame, _play_job, play_game, play_games
from .report import CONTRACT_LABELS, format_comparison, format_table, plot_results, progress_bar
from .schedule import (
    SEATING_RULE,
    SEATINGS,
    _Job,
    agent_labels,
    agent_seed,
    check_agents,
    check_games,
    check_seed,
    deal_set,
    deal_sets,
    jobs,
    rules_name,
    seating,
)
from .stats import EntryStats, Estimate, HeadToHead, InstanceStats, TournamentResult, summarize, t95

#: Jobs handed to the worker processes at a time, per worker: enough to keep each busy
#: while the results of the last one are collected, never the whole tournament at once.
JOBS_IN_FLIGHT_PER_WORKER = 2

_JobResult = tuple[GameData, list[tuple[int, GameRecord]]]


def evaluate(
    agents: Sequence[str | AgentSpec] | str,
    games: int,
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    workers: int | None = None,
    progress: bool = False,
    records_dir: str | Path | None = None,
    record_games: int | None = None,
) -> TournamentResult:
    """Run a duplicate tournament of four agents (specs: ``barbu_env.agents.registry``; a list,
    or one comma-separated text; repeats allowed) over ``games`` games (rounded up to a
    multiple of 4).

    ``workers``: processes (default ``os.cpu_count()``; 1 plays in this process).
    ``records_dir``: save game records there as ``game_00000.json`` ...: every game, or the
    first ``record_games``; each is written whole or not at all, and a record that cannot
    be written (a full disk) does not stop the tournament: no more records are attempted,
    and ``result.run["records_not_saved"]`` says which file failed, why, and how many
    records were not saved (``None`` when all were). ``progress``: a tqdm bar on stderr."""
    specs = tuple(specs_of(agents))
    if len(specs) != NUM_PLAYERS:
        raise ValueError(f"a tournament takes exactly 4 agents (repeats allowed), got {len(specs)}")
    games = check_games(games)
    check_agents(specs, rules)
    check_seed(seed)
    rules_label = rules_name(rules)
    rules = load_rules(rules)
    n_sets = deal_sets(games)
    if records_dir is not None:
        records_dir = Path(records_dir)
        records_dir.mkdir(parents=True, exist_ok=True)
        record_games = n_sets * SEATINGS if record_games is None else record_games
    else:
        record_games = 0
    workers = max(1, min(workers or os.cpu_count() or 1, n_sets))
    _, labels = agent_labels(specs)
    collected = _Collector(records_dir, digits=max(5, len(str(n_sets * SEATINGS - 1))))

    start = time.perf_counter()
    _play_all(jobs(specs, labels, rules, seed, n_sets, record_games), workers, n_sets * SEATINGS, progress, collected)
    seconds = time.perf_counter() - start

    result = summarize(specs, GameData.concat(collected.parts), seed, rules, rules_label)
    result.run = {
        "workers": workers,
        "seconds": round(seconds, 3),
        "games_per_second": round(result.games / seconds, 2) if seconds > 0 else None,
        "records_dir": str(records_dir) if records_dir is not None else None,
        "records_saved": collected.saved,
        "records_not_saved": collected.not_saved(),
    }
    return result


@dataclass
class _Collector:
    """Keeps each job's games as it comes in and saves its records in ``records_dir``,
    until one cannot be written: the games go on, the records after it are counted, not
    attempted."""

    records_dir: Path | None
    digits: int  # of the game index in a record's file name
    parts: list[GameData] = field(default_factory=list)
    saved: int = 0
    failure: str | None = None  # the first write that failed
    skipped: int = 0  # records not written, that one included

    def __call__(self, result: _JobResult, bar: Any) -> None:
        data, records = result
        self.parts.append(data)
        for index, record in records:
            if self.failure is None:
                try:
                    record.save(self.records_dir / f"game_{index:0{self.digits}d}.json")
                except OutputError as e:
                    self.failure = str(e)
                else:
                    self.saved += 1
                    continue
            self.skipped += 1
        bar.update(len(data.game))

    def not_saved(self) -> str | None:
        if self.failure is None:
            return None
        return f"{self.failure}; {self.skipped} game records not saved ({self.saved} were)"


def _worker_start() -> None:
    """A worker process computes on one CPU thread: the workers share the cores, and a
    process forked after the parent's torch thread pool started waits on that pool for ever
    the first time it computes on several threads. The engine never imports torch; where
    the parent has, it is set to one thread here, and where it has not, a torch imported
    later starts with one (``OMP_NUM_THREADS``, this process's environment only)."""
    os.environ["OMP_NUM_THREADS"] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _play_all(
    todo: Iterator[_Job], workers: int, games: int, progress: bool, collect: Callable[[_JobResult, Any], None]
) -> None:
    """Play every job of ``todo`` (in this process, or on ``workers`` processes with at
    most ``JOBS_IN_FLIGHT_PER_WORKER`` each handed out at a time), giving each job's
    result to ``collect`` with the progress bar over the ``games`` games, as it comes."""
    if workers == 1:
        with progress_bar(games, "game", progress) as bar:
            for job in todo:
                collect(_play_job(job), bar)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_worker_start) as pool:
        # The first jobs are submitted before the bar's thread starts, so the workers start first.
        pending = {pool.submit(_play_job, job) for job in itertools.islice(todo, workers * JOBS_IN_FLIGHT_PER_WORKER)}
        try:
            with progress_bar(games, "game", progress) as bar:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    # Refill first, so the workers play on while the results are collected.
                    pending |= {pool.submit(_play_job, job) for job in itertools.islice(todo, len(done))}
                    for future in done:
                        collect(future.result(), bar)
        except BaseException:  # an agent's error or Ctrl-C: drop the jobs not started
            pool.shutdown(cancel_futures=True)
            raise


__all__ = [
    "CONTRACT_LABELS",
    "Comparison",
    "JOBS_IN_FLIGHT_PER_WORKER",
    "SEATING_RULE",
    "SEATINGS",
    "EntryStats",
    "Estimate",
    "GameData",
    "HeadToHead",
    "InstanceStats",
    "PlayedGame",
    "TournamentResult",
    "agent_labels",
    "agent_seed",
    "check_agents",
    "check_games",
    "check_seed",
    "compare",
    "deal_set",
    "deal_sets",
    "evaluate",
    "format_comparison",
    "format_table",
    "play_game",
    "play_games",
    "plot_results",
    "rules_name",
    "seating",
    "summarize",
    "t95",
]
