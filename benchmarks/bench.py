"""Decisions per second of random legal full games: the engine, the AEC environment,
Barbu as an OpenSpiel game, and OpenSpiel's ``hearts`` as a yardstick, measured in one run
on one pinned core.

Run ``python -m benchmarks.bench`` (``--help`` for the options). Every subject plays whole
games with a uniformly random legal action at each decision, until ``--seconds`` have
passed (the last game is finished, and its time counted) or for exactly ``--games``
games. Setting up each game (``new_game``, ``env.reset``, ``new_initial_state``) is
inside the timed region.

==============================  ==========================================================
subject                         one decision is ...
==============================  ==========================================================
barbu engine (mask)             ``legal_mask()``, a random set bit of it, ``apply_action``
barbu engine (legal_actions)    ``legal_actions()``, a random element, ``apply_action``
barbu AEC env()                 one ``env.last()`` + ``env.step(action)`` of the standard
                                PettingZoo loop (observation and mask built), action taken
                                from ``np.flatnonzero(obs["action_mask"])``; the dead steps
                                of finished agents (``action=None``) are not counted
barbu AEC raw_env               the same loop on ``env.unwrapped`` (no order-enforcing
                                wrapper)
barbu batched engine            one game's share of a ``VectorBarbu.step`` of B games in
                                lockstep (``--batch``, default 256): the step writes the B
                                observations float32 [B, 1132] and masks bool [B, 85]; a
                                uniformly random legal action per game is drawn in numpy
                                from the masks (``random_legal_actions``)
hearts bare                     ``legal_actions()``, a random element, ``apply_action``;
                                chance nodes (pass direction, the deal) are sampled from
                                ``chance_outcomes()`` inside the timed region but are not
                                counted as decisions
hearts observer                 as hearts bare, plus ``observation.set_from(state, player)``
                                filling a numpy buffer for the player to act
barbu pyspiel bare              the OpenSpiel game ``python_barbu`` (``barbu_env.envs.openspiel``,
                                episode "game"): ``legal_actions()``, a random element,
                                ``apply_action``; its chance nodes (the first declarer, then
                                52 cards a hand) are sampled from ``chance_outcomes()``
                                inside the timed region but not counted as decisions, and
                                their share of the time is in the note
barbu pyspiel + observation     as pyspiel bare, plus ``observation_tensor(player)`` for the
                                player to act (the observation through OpenSpiel's Python
                                observer bridge, copied out as a list of floats)
barbu pyspiel + observer        as pyspiel bare, plus ``observation.set_from(state, player)``
                                of an observer made once by ``make_observation`` (the path
                                of the hearts observer row), filling its numpy buffer
pimc agent                      one ``act`` of the ``pimc`` search agent in seat 0 of the AEC
                                environment (three ``heuristic`` players), forced decisions
                                included; only the agent's time counts; ``--pimc-games`` games
                                (default 1, 0 leaves it out), ``--pimc-worlds`` worlds; the
                                note gives seconds per game and the rollout decisions/s
==============================  ==========================================================

A Barbu game is 28 hands and every turn is a decision, forced ones included (declaring,
naming a trump or Domino rank, each doubling turn, each card or Domino pass). An
OpenSpiel ``hearts`` game is one deal: up to 12 passed cards plus 52 card plays.

The ratio column divides a Barbu rate by the matching ``hearts`` rate: the engine rows
and pyspiel bare by hearts bare, the environment rows, pyspiel with observations and the
batched engine (which produces observations too) by hearts with its observer.

The batched engine runs until ``--seconds`` have passed or ``--games`` games have
finished; its decisions are all those of its steps (B per step, games still running
included). Building the environment and its ``reset`` are timed. Every Barbu subject runs
on the numba kernels; loading them (or, on the very first run, compiling them) happens
before the clock starts (``warm_kernels``).

Times are wall time; ``--cpu-time`` times with the process's CPU time instead, for a
machine busy with other work (where wall-time figures swing with the other load).

Only ``main`` prints; the functions return ``Measurement`` records.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from collections.abc import Callable

import numpy as np

from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import Rules, load_rules, preset_names
from barbu_env.util.argtypes import OneLineParser, nonnegative_int, positive_float, positive_int
from barbu_env.util.extras import require
from barbu_env.util.files import check_writable, error_line, write_text
from benchmarks.machine import machine_info, pin_to_core
from benchmarks.results import (
    AEC_ENV,
    AEC_RAW,
    ENGINE_LIST,
    ENGINE_MASK,
    HEARTS_BARE,
    HEARTS_OBS,
    PIMC,
    PYSPIEL_BARE,
    PYSPIEL_OBS,
    PYSPIEL_OBSERVER,
    VECTOR,
    Measurement,
    results_json,
    results_table,
)
from benchmarks.results import RATIO_TO as RATIO_TO  # re-exported: the ratios' pairing of the names above

#: Games stepped together by the batched-engine subject, unless ``--batch`` says otherwise.
DEFAULT_BATCH = 256
#: Games the pimc subject plays (it is slow: seconds per game), unless ``--pimc-games`` says otherwise.
DEFAULT_PIMC_GAMES = 1

#: The clock of every measurement: wall time, or this process's CPU time with
#: ``--cpu-time`` (``use_cpu_time``), for a machine busy with other work.
clock = time.perf_counter


def use_cpu_time(on: bool = True) -> None:
    """Measure with ``time.process_time`` (this process's CPU time) instead of wall time."""
    global clock
    clock = time.process_time if on else time.perf_counter


# ---------------------------------------------------------------------- timing


def measure(one_game: Callable[[], int], seconds: float, games: int | None = None) -> tuple[int, int, float]:
    """Call ``one_game`` (which plays one full game and returns its decision count)
    until ``seconds`` have passed, or exactly ``games`` times if given.

    Returns (games played, decisions, elapsed seconds)."""
    played = decisions = 0
    start = clock()
    deadline = start + seconds
    while True:
        decisions += one_game()
        played += 1
        now = clock()
        if (played >= games) if games is not None else (now >= deadline):
            return played, decisions, now - start


def random_bit(mask: int, rng: random.Random) -> int:
    """A uniformly random set bit of ``mask`` (non-zero), as its index: the k-th lowest
    set bit for a random k.

    >>> random_bit(0b1000, random.Random(0))
    3
    """
    for _ in range(int(rng.random() * mask.bit_count())):
        mask &= mask - 1  # drop the lowest set bit
    return (mask & -mask).bit_length() - 1


# ---------------------------------------------------------------------- barbu engine


def warm_kernels(rules: Rules) -> None:
    """Load (or compile) the engine's kernels: a throwaway game, its own Generator, a few
    decisions, observations included."""
    state = BarbuState.new_game(rules=rules, rng=np.random.default_rng(0))
    for _ in range(3):
        state.observe(state.current_player)
        state.apply_action(state.legal_mask().bit_length() - 1)


def bench_engine_mask(
    seconds: float, games: int | None = None, rules: Rules | str | None = None, seed: int = 0
) -> Measurement:
    """The engine alone; the action is a random set bit of ``legal_mask()``."""
    rules = load_rules(rules)
    warm_kernels(rules)
    deal_rng = np.random.default_rng(seed)
    rng = random.Random(seed)

    def one_game() -> int:
        state = BarbuState.new_game(rules=rules, rng=deal_rng)
        n = 0
        while not state.is_terminal:
            state.apply_action(random_bit(state.legal_mask(), rng))
            n += 1
        return n

    return Measurement(ENGINE_MASK, *measure(one_game, seconds, games))


def bench_engine_legal_actions(
    seconds: float, games: int | None = None, rules: Rules | str | None = None, seed: int = 0
) -> Measurement:
    """The engine alone; the action is a random element of ``legal_actions()``."""
    rules = load_rules(rules)
    warm_kernels(rules)
    deal_rng = np.random.default_rng(seed)
    rng = random.Random(seed)

    def one_game() -> int:
        state = BarbuState.new_game(rules=rules, rng=deal_rng)
        n = 0
        while not state.is_terminal:
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            n += 1
        return n

    return Measurement(ENGINE_LIST, *measure(one_game, seconds, games))


# ---------------------------------------------------------------------- barbu AEC environment


def make_aec_env(rules: Rules | str | None = None):
    """``barbu_env.env(rules=...)``; raises ImportError (or whatever the import raises)
    while the environment is not available."""
    from barbu_env import env

    return env(rules=rules)


def _play_aec(env, seed: int, seconds: float, games: int | None) -> tuple[int, int, float]:
    """The standard PettingZoo AEC loop, random legal actions taken from the mask."""
    rng = random.Random(seed)
    seeds = itertools.count(seed)  # a fresh seed per game

    def one_game() -> int:
        env.reset(seed=next(seeds))
        n = 0
        for _agent in env.agent_iter():
            obs, _reward, termination, truncation, _info = env.last()
            if termination or truncation:
                action = None
            else:
                legal = np.flatnonzero(obs["action_mask"])
                action = int(legal[int(rng.random() * len(legal))])
                n += 1
            env.step(action)
        return n

    return measure(one_game, seconds, games)


def bench_aec(seconds: float, games: int | None = None, rules: Rules | str | None = None, seed: int = 0) -> Measurement:
    """``barbu_env.env()`` as users get it (all PettingZoo wrappers), observations and
    masks included."""
    env = make_aec_env(rules)
    warm_kernels(load_rules(rules))
    try:
        return Measurement(AEC_ENV, *_play_aec(env, seed, seconds, games), note=_env_note(env))
    finally:
        env.close()


def bench_aec_raw(
    seconds: float, games: int | None = None, rules: Rules | str | None = None, seed: int = 0
) -> Measurement:
    """The same loop on ``env.unwrapped``: the raw environment without its wrappers."""
    env = make_aec_env(rules)
    warm_kernels(load_rules(rules))
    try:
        raw = env.unwrapped
        return Measurement(AEC_RAW, *_play_aec(raw, seed, seconds, games), note=_env_note(raw))
    finally:
        env.close()


def _env_note(env) -> str:
    """The observation's parts and sizes, e.g. 'observation float32[400], action_mask int8[85]'."""
    try:
        space = env.observation_space(env.possible_agents[0])
        parts = space.spaces.items() if hasattr(space, "spaces") else [("observation", space)]
        return ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in parts)
    except Exception:  # a description only: never fail a measurement over it
        return ""


# ---------------------------------------------------------------------- barbu batched engine


def random_legal_actions(masks: np.ndarray, rng: np.random.Generator, row_ends: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of ``masks`` (bool [B, 85], no row
    empty), in numpy: the flat indices of the legal actions, each row's slice of them
    found by ``searchsorted`` (``row_ends`` = 85, 170, ... 85 * B), one uniform pick per
    slice.

    >>> m = np.zeros((2, 85), dtype=bool); m[0, [3, 60]] = True; m[1, 84] = True
    >>> a = random_legal_actions(m, np.random.default_rng(0), np.array([85, 170]))
    >>> int(a[0]) in (3, 60), int(a[1])
    (True, 84)
    """
    legal = np.flatnonzero(masks)
    ends = np.searchsorted(legal, row_ends)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1]
    pick = starts + (rng.random(len(ends)) * (ends - starts)).astype(np.int64)
    return legal[pick] - (row_ends - masks.shape[1])


def bench_vector(
    seconds: float,
    games: int | None = None,
    rules: Rules | str | None = None,
    seed: int = 0,
    batch: int = DEFAULT_BATCH,
) -> Measurement:
    """``VectorBarbu``: ``batch`` games in lockstep, observations and masks of every
    game written at every step (``copy=False``: into the environment's own buffers,
    which the caller reads), random legal actions drawn in numpy from the masks, played
    by the batched play driver (``driver.play``) as every batched loop of barbu is."""
    from barbu_env.game.driver import EngineStep, play
    from barbu_env.game.vector import VectorBarbu

    warm = VectorBarbu(1, rules=rules, seed=seed)  # loads (or compiles) the kernels, untimed
    _obs, warm_masks, _seat = warm.reset()
    warm.step(np.flatnonzero(warm_masks[0])[:1])
    rng = np.random.default_rng(seed)
    row_ends = np.arange(1, batch + 1) * 85
    start = clock()
    vec = VectorBarbu(batch, rules=rules, seed=seed, copy=False)
    deadline = start + seconds
    count = {"steps": 0, "finished": 0}

    def draw(rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, seats: np.ndarray) -> np.ndarray:
        return random_legal_actions(masks.view(bool), rng, row_ends)  # (flatnonzero is fastest on bool)

    def tick(step: EngineStep) -> bool:
        count["steps"] += 1
        count["finished"] += int(np.count_nonzero(step.dones))
        return (count["finished"] >= games) if games is not None else (clock() >= deadline)

    play(vec, draw, vec.reset(), until=None, on_step=tick)
    steps, finished = count["steps"], count["finished"]
    elapsed = clock() - start
    note = (
        f"B = {batch} games in lockstep, {steps:,} steps; obs float32[{batch}, 1132] and masks "
        f"bool[{batch}, 85] written every step (copy=False); games = games finished"
    )
    return Measurement(VECTOR, finished, steps * batch, elapsed, note=note)


# ---------------------------------------------------------------------- OpenSpiel hearts


def bench_pimc(games: int, worlds: int, rules: Rules | str | None = None, seed: int = 0) -> Measurement:
    """The ``pimc`` search agent in seat 0 of the AEC environment, the heuristic in the
    other seats, for ``games`` whole games: its decisions (forced ones included) per
    second; the note has the seconds per game, the searched decisions and the rollout
    decisions per second its searches played. The agent's contract baselines (measured
    once per rules and rollout policy) are computed before the clock starts."""
    from barbu_env.agents import make_agent

    rules = load_rules(rules)
    warm_kernels(rules)
    env = make_aec_env(rules)
    agent = make_agent("pimc", seed=seed, rules=rules, worlds=worlds)
    others = make_agent("heuristic", seed=seed, rules=rules)
    agent.contract_baselines()
    decisions = searched = 0
    spent = 0.0  # time inside the agent
    start = clock()
    for g in range(games):
        env.reset(seed=seed + g)
        for name in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            if name == "player_0":
                t = clock()
                action = agent.act(obs, name)
                spent += clock() - t
                decisions += 1
                searched += int(obs["action_mask"].sum() > 1)
            else:
                action = others.act(obs, name)
            env.step(action)
    elapsed = clock() - start
    env.close()
    note = (
        f"worlds={worlds}: {elapsed / games:.1f} s per game ({spent / games:.1f} s in the agent), "
        f"{searched} of {decisions} decisions searched ({searched / spent:.0f}/s), "
        f"rollouts {agent.rollout_decisions / spent:,.0f} decisions/s"
    )
    return Measurement(PIMC, games, decisions, spent, note=note)


def _play_hearts(seconds: float, games: int | None, seed: int, observe=None) -> tuple[int, int, float, int]:
    """Random play of OpenSpiel ``hearts``; ``observe(state, player)`` is called before
    each player decision if given. Chance nodes are sampled (timed) but not counted as
    decisions. Returns (games, decisions, seconds, chance nodes)."""
    import pyspiel

    game = pyspiel.load_game("hearts")
    rng = random.Random(seed)
    chance_nodes = 0

    def one_game() -> int:
        nonlocal chance_nodes
        state = game.new_initial_state()
        n = c = 0
        while not state.is_terminal():
            if state.is_chance_node():
                # Every hearts chance node is uniform (the pass direction, each undealt
                # card), so a random element of chance_outcomes() is an exact sample.
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                c += 1
                continue
            if observe is not None:
                observe(state, state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            n += 1
        chance_nodes += c
        return n

    return (*measure(one_game, seconds, games), chance_nodes)


def bench_hearts_bare(seconds: float, games: int | None = None, seed: int = 0) -> Measurement:
    """OpenSpiel ``hearts`` (C++ through pybind11), random play, no observation."""
    played, decisions, elapsed, chance = _play_hearts(seconds, games, seed)
    note = f"{chance:,} chance nodes sampled, timed, not counted"
    return Measurement(HEARTS_BARE, played, decisions, elapsed, note=note)


def hearts_observation():
    """An OpenSpiel observation of ``hearts`` whose ``tensor`` is a numpy view of the
    buffer ``set_from`` fills, and a description of it.

    The plain observation tensor (``perfect_recall=False``) is tried first; ``hearts``
    offers only the information-state tensor (``perfect_recall=True``), so that is the
    fallback."""
    import pyspiel
    from open_spiel.python.observation import make_observation

    game = pyspiel.load_game("hearts")
    for perfect_recall in (False, True):
        try:
            obs = make_observation(game, pyspiel.IIGObservationType(perfect_recall=perfect_recall))
        except pyspiel.SpielError:
            obs = None
        if obs is not None and obs.tensor is not None:
            kind = "information-state tensor" if perfect_recall else "observation tensor"
            return obs, f"{kind} float32[{obs.tensor.size}]"
    raise RuntimeError("hearts offers no observation tensor")


def bench_hearts_observer(seconds: float, games: int | None = None, seed: int = 0) -> Measurement:
    """OpenSpiel ``hearts``, random play, the observer filling a numpy buffer for the
    player to act at every decision."""
    obs, description = hearts_observation()
    played, decisions, elapsed, chance = _play_hearts(seconds, games, seed, observe=obs.set_from)
    note = f"{description}, filled for the player to act; {chance:,} chance nodes sampled, timed, not counted"
    return Measurement(HEARTS_OBS, played, decisions, elapsed, note=note)


# ---------------------------------------------------------------------- barbu through pyspiel


def bench_pyspiel(
    seconds: float,
    games: int | None = None,
    rules: Rules | str | None = None,
    seed: int = 0,
    observe: bool | str = False,
) -> Measurement:
    """Random play of the OpenSpiel game ``python_barbu`` (a whole game per episode):
    decisions counted, chance steps sampled, timed one by one and reported in the note;
    with ``observe`` (True or ``"observation_tensor"``) the player to act's
    ``observation_tensor`` at every decision, with ``observe="observer"`` an observer made
    once by ``make_observation`` filling its numpy buffer for that player (the path the
    ``hearts`` observer row measures)."""
    import pyspiel
    from open_spiel.python.observation import make_observation

    from barbu_env.envs import openspiel

    mode = "observation_tensor" if observe is True else (observe or None)
    if mode not in (None, "observation_tensor", "observer"):
        raise ValueError(f"observe is False, True, 'observation_tensor' or 'observer', not {observe!r}")
    game = openspiel.load_game(rules, "game")
    observer = make_observation(game, pyspiel.IIGObservationType(perfect_recall=False)) if mode == "observer" else None
    warm_kernels(load_rules(rules))
    rng = random.Random(seed)
    chance_nodes = 0
    chance_seconds = 0.0

    def one_game() -> int:
        nonlocal chance_nodes, chance_seconds
        state = game.new_initial_state()
        n = c = 0
        spent = 0.0
        while not state.is_terminal():
            if state.is_chance_node():
                # Every python_barbu chance node is uniform (the first declarer, each
                # undealt card), so a random element of chance_outcomes() is an exact sample.
                start = clock()
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                spent += clock() - start
                c += 1
                continue
            player = state.current_player()
            if observer is not None:
                observer.set_from(state, player)
            elif mode:
                state.observation_tensor(player)
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            n += 1
        chance_nodes += c
        chance_seconds += spent
        return n

    played, decisions, elapsed = measure(one_game, seconds, games)
    share = chance_seconds / elapsed if elapsed > 0 else 0.0
    rest = elapsed - chance_seconds
    note = (
        f"{chance_nodes:,} chance nodes ({chance_nodes // max(played, 1):,} a game) took {chance_seconds:.2f} s, "
        f"{share:.0%} of the time, {chance_seconds / max(chance_nodes, 1) * 1e6:.1f} us each; "
        f"decisions alone {decisions / rest if rest > 0 else 0:,.0f}/s"
    )
    name = {None: PYSPIEL_BARE, "observation_tensor": PYSPIEL_OBS, "observer": PYSPIEL_OBSERVER}[mode]
    return Measurement(name, played, decisions, elapsed, note=note)


# ---------------------------------------------------------------------- the run


def run(
    seconds: float,
    games: int | None,
    rules: str,
    seed: int,
    batch: int = DEFAULT_BATCH,
    pimc_games: int = 0,
    pimc_worlds: int = 32,
) -> tuple[list[Measurement], dict[str, str]]:
    """Every subject in turn. Returns the measurements and, per subject that could not
    run, the reason it was skipped."""
    results: list[Measurement] = []
    skipped: dict[str, str] = {}
    env_error = _import_error(make_aec_env, rules)
    spiel_error = _import_error(require, "pyspiel", "openspiel", "OpenSpiel's hearts", "open_spiel")
    pyspiel_error = _import_error(require, "pyspiel", "openspiel", "Barbu as an OpenSpiel game", "open_spiel")
    vector_error = _import_error(lambda: __import__("barbu_env.game.vector"))
    subjects = [  # (name, why it cannot run or None, the measurement)
        (ENGINE_MASK, None, lambda: bench_engine_mask(seconds, games, rules, seed)),
        (ENGINE_LIST, None, lambda: bench_engine_legal_actions(seconds, games, rules, seed)),
        (AEC_ENV, env_error, lambda: bench_aec(seconds, games, rules, seed)),
        (AEC_RAW, env_error, lambda: bench_aec_raw(seconds, games, rules, seed)),
        (VECTOR, vector_error, lambda: bench_vector(seconds, games, rules, seed, batch)),
        (HEARTS_BARE, spiel_error, lambda: bench_hearts_bare(seconds, games, seed)),
        (HEARTS_OBS, spiel_error, lambda: bench_hearts_observer(seconds, games, seed)),
        (PYSPIEL_BARE, pyspiel_error, lambda: bench_pyspiel(seconds, games, rules, seed)),
        (PYSPIEL_OBS, pyspiel_error, lambda: bench_pyspiel(seconds, games, rules, seed, observe=True)),
        (PYSPIEL_OBSERVER, pyspiel_error, lambda: bench_pyspiel(seconds, games, rules, seed, observe="observer")),
    ]
    if pimc_games > 0:
        subjects.append((PIMC, env_error, lambda: bench_pimc(pimc_games, pimc_worlds, rules, seed)))
    for name, error, bench in subjects:
        if error:
            skipped[name] = error
        else:
            results.append(bench())
    return results, skipped


def _import_error(make, *args) -> str | None:
    """None if ``make(*args)`` works, else the reason it does not."""
    try:
        obj = make(*args)
    except Exception as e:  # a subject that cannot be built is skipped, with the reason
        return f"{type(e).__name__}: {e}"
    if hasattr(obj, "close"):
        obj.close()
    return None


def parse_args(argv: list[str] | None = None, prog: str = "python -m benchmarks.bench") -> argparse.Namespace:
    p = OneLineParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=positive_float, default=5.0, help="time budget per subject (default 5)")
    p.add_argument("--games", type=positive_int, help="play exactly this many games per subject instead")
    p.add_argument("--rules", default="standard", choices=preset_names(), help="Barbu rules preset (default standard)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the deals and the random players")
    p.add_argument(
        "--batch",
        type=positive_int,
        default=DEFAULT_BATCH,
        metavar="B",
        help=f"games stepped together by the batched engine (default {DEFAULT_BATCH})",
    )
    pin = p.add_mutually_exclusive_group()
    pin.add_argument(
        "--pin-core",
        type=nonnegative_int,
        metavar="CORE",
        help="pin the process to this core, one it may use (default: the highest-numbered allowed core)",
    )
    pin.add_argument("--no-pin", action="store_true", help="do not pin the process to a core")
    p.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with this process's CPU time instead of wall time (for a busy machine)",
    )
    p.add_argument(
        "--pimc-games",
        type=nonnegative_int,
        default=DEFAULT_PIMC_GAMES,
        metavar="K",
        help=f"games for the pimc search agent's figures (default {DEFAULT_PIMC_GAMES}; 0 leaves it out)",
    )
    p.add_argument("--pimc-worlds", type=positive_int, default=32, metavar="W", help="pimc's worlds per decision")
    p.add_argument("--json", metavar="PATH", help="also write the figures and machine info to this JSON file")
    return p.parse_args(argv)


def main(argv: list[str] | None = None, prog: str = "python -m benchmarks.bench") -> int:
    """Run the benchmark; returns the exit status. A bad option, a core this process may
    not use or an unwritable ``--json`` is one line on stderr (status 2 or 1), before
    anything is measured."""
    args = parse_args(argv, prog)
    try:
        pinned = None if args.no_pin else pin_to_core(args.pin_core)
        if args.json:
            check_writable(args.json, "--json")
    except (ValueError, OSError) as e:
        print(error_line(f"{prog}: error: {e}"), file=sys.stderr)
        return 1
    info = machine_info(pinned)
    use_cpu_time(args.cpu_time)

    print(
        f"python {info['python']} ({info['implementation']}), numpy {info['numpy']}, "
        f"pettingzoo {info['pettingzoo']}, pyspiel {info['pyspiel']}"
    )
    print(f"{info['platform']}; {info['cpu']}; {info['cpus']} cpus")
    if pinned is None:
        print("not pinned to a core")
    else:
        print(f"pinned to core {pinned} (os.sched_setaffinity(0, {{{pinned}}}))")
    budget = f"{args.games} games" if args.games is not None else f"{args.seconds:g} s (whole games)"
    print(f"rules {args.rules}, seed {args.seed}, per subject: {budget}; random legal play")
    print("clock: this process's CPU time (--cpu-time)" if args.cpu_time else "clock: wall time")
    print()

    results, skipped = run(
        args.seconds, args.games, args.rules, args.seed, args.batch, args.pimc_games, args.pimc_worlds
    )
    print(results_table(results))
    notes = [m for m in results if m.note]
    if notes or skipped:
        print()
    for m in notes:
        print(f"{m.name}: {m.note}")
    for name, reason in skipped.items():
        print(f"{name}: skipped ({reason})")
    print()
    print("decisions: every Barbu turn (forced ones too); hearts counts player decisions only, not chance nodes")

    if args.json:
        settings = {
            "seconds": args.seconds,
            "games": args.games,
            "rules": args.rules,
            "seed": args.seed,
            "batch": args.batch,
            "pimc_games": args.pimc_games,
            "pimc_worlds": args.pimc_worlds,
            "clock": "cpu" if args.cpu_time else "wall",
        }
        doc = results_json(info, settings, results, skipped)
        try:  # the table is printed: a full disk loses only the file (the old one stays whole)
            write_text(args.json, json.dumps(doc, indent=2) + "\n")
        except OSError as e:
            print(error_line(f"{prog}: not saved: {e}"), file=sys.stderr)
            return 1
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
