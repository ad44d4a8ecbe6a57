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
Deal sets are split into jobs of up to 16 (``schedule.jobs``, cut the same way whatever
the number of workers) played by a ``ProcessPoolExecutor`` (``workers=1`` plays in this
process) whose workers compute on one CPU thread each (``_worker_start``); a tqdm bar on
stderr counts games. Jobs are made as they are handed out, at most
``JOBS_IN_FLIGHT_PER_WORKER`` per worker waiting or running at a time, so a tournament
starts at once whatever its size. A job's games, up to 64, step together on one batched
engine (``barbu_env.game.vector.VectorBarbu``, the numba kernels behind ``barbu_env.env()``),
played by the batched play driver (``barbu_env.game.driver.play``): each game is loaded at its
first decision, and at each step the decisions of all its live games are handed to their
agents, grouped (``driver.act_rows``); each agent gets exactly the observation dict
``barbu_env.env()`` would give it (a test checks this), and every decision is put to its
agent, forced ones included, as in the environment. Agents sharing what they decide with
(trained policies loaded from one file: one network; heuristic agents under the same
rules: one compiled kernel) have an equal ``batch_key`` and are asked together in one
``act_batch`` call with ``instances``, each instance drawing its own action with its own
generator; other agents with ``act_batch`` answer for their rows in one call (the random
agent's draws, from its own generator, are exactly those of ``act`` row by row), the rest
through ``act``. Hand results and doubles come from the engine's record of each finished
hand; a game record (``records_dir``) is made by replaying the game's actions on a
``BarbuState``, for the recorded games only. ``play_games`` plays the same loop and gives
every game's ``BarbuState``.

Sizes
-----
``games`` is at least 1 (``check_games``). Every game's results (``GameData``, one row per
game: int32 scores and hand scores, int16 declarers and contracts, int8 doubles; and the
per-game table of the result) are kept until the statistics are taken, about 10 KB per
game at the peak, so the statistics of N games need O(N) memory whatever the scheduling.

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
Each module of the package has one job; every name documented here is importable from
``barbu_env.evaluation.tournament`` itself.

- ``schedule``: what a tournament plays: sizes and the checks before play, deal sets,
  seatings, seeds, labels, and the jobs it is cut into;
- ``play``: playing games: the batched play loop (``play_games``, ``play_game``) and a
  worker's job (``_play_job``), giving per-game arrays (``GameData``);
- ``stats``: the statistics: ``t95``, ``Estimate``, ``summarize`` and
  ``TournamentResult``;
- ``report``: the text table (``format_table``) and the plot
  (``plot_results``);
- this module: ``evaluate``, which checks what it is asked, hands the jobs to the
  worker processes, saves the records asked for and summarizes the games.

The league (``barbu_env.evaluation.league``) builds on the same pieces.

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
from barbu_env.util.files import OutputError, cut_text

from .play import GameData, PlayedGame, _play_job, play_game, play_games
from .report import CONTRACT_LABELS, format_table, plot_results, progress_bar
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
        try:
            records_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            folder = cut_text(str(records_dir))
            raise OutputError(f"cannot make the records folder {folder}: {e.strerror or e}") from None
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
    "deal_set",
    "deal_sets",
    "evaluate",
    "format_table",
    "play_game",
    "play_games",
    "plot_results",
    "rules_name",
    "seating",
    "summarize",
    "t95",
]
