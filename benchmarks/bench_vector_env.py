"""Learner steps per second of ``"Barbu-v1"`` vectorised three ways, measured in one run.

Run ``python -m benchmarks.bench_vector_env`` (``--help`` for the options). Each subject
is N games of ``Barbu-v1`` (the learner in seat 0, three opponents, whole games by
default) stepped with a uniformly random legal learner action per game, drawn in numpy
from ``info["action_mask"]``, for ``--seconds`` of wall time after a short warm-up;
a *learner step* is one sub-environment's step (N per ``step`` call), the opponents'
moves in between included. Opponents: 3x ``heuristic``, then 3x ``random``
(``--opponents``).

=====================  ==============================================================
subject                the vector environment
=====================  ==============================================================
vector entry point     ``gymnasium.make_vec("Barbu-v1", N, vectorization_mode=
                       "vector_entry_point")``: ``BarbuGymVectorEnv``, one batch
                       (``--envs``, default 256)
SyncVectorEnv          ``vectorization_mode="sync"``: N ``Barbu-v1`` stepped in turn in
                       this process (same N), same-step autoreset as the entry point's
AsyncVectorEnv         ``vectorization_mode="async"``: one ``Barbu-v1`` per worker
                       process (``--async-envs``, default the number of cores: more
                       processes than cores only share them)
=====================  ==============================================================

The ratio column divides each rate by the SyncVectorEnv rate with the same opponents.
Wall time is the clock (the async workers run in other processes), so run it on an
otherwise idle machine. Building each environment and its ``reset`` are not timed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import gymnasium
import numpy as np

from barbu_env import GYM_ENV_ID
from barbu_env.util.argtypes import OneLineParser, nonnegative_int, positive_float, positive_int
from benchmarks.machine import machine_info

#: The subjects, in the order they run.
VECTOR_ENTRY_POINT, SYNC, ASYNC = "vector entry point", "SyncVectorEnv", "AsyncVectorEnv"
MODES = {VECTOR_ENTRY_POINT: "vector_entry_point", SYNC: "sync", ASYNC: "async"}
WARM_UP_STEPS = 5


@dataclass
class Measurement:
    subject: str
    opponents: str
    envs: int
    steps: int  # learner steps: sub-environment steps
    seconds: float

    @property
    def rate(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of ``masks`` [N, 85] (nonzero: legal)."""
    return np.where(masks > 0, rng.random(masks.shape), -1.0).argmax(axis=1)


def bench_subject(subject: str, opponents: str, envs: int, seconds: float, episode: str, seed: int) -> Measurement:
    """One subject's learner steps per second (see the module docstring)."""
    mode = MODES[subject]
    same_step = {} if mode == "vector_entry_point" else {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}
    env = gymnasium.make_vec(
        GYM_ENV_ID, envs, vectorization_mode=mode, vector_kwargs=same_step, opponents=opponents, episode=episode
    )
    try:
        rng = np.random.default_rng(seed)
        _, info = env.reset(seed=seed)
        for _ in range(WARM_UP_STEPS):
            _, _, _, _, info = env.step(random_legal(info["action_mask"], rng))
        steps = 0
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            _, _, _, _, info = env.step(random_legal(info["action_mask"], rng))
            steps += envs
        return Measurement(subject, opponents, envs, steps, elapsed)
    finally:
        env.close()


def run(
    opponents: list[str], envs: int, async_envs: int, seconds: float, episode: str = "game", seed: int = 0
) -> list[Measurement]:
    """Every subject for every opponent, in turn."""
    sizes = {VECTOR_ENTRY_POINT: envs, SYNC: envs, ASYNC: async_envs}
    return [bench_subject(s, o, sizes[s], seconds, episode, seed) for o in opponents for s in MODES if sizes[s] > 0]


def format_table(results: list[Measurement]) -> str:
    sync = {m.opponents: m.rate for m in results if m.subject == SYNC}
    lines = ["| opponents | subject | N | learner steps/s | vs SyncVectorEnv |", "|---|---|---|---|---|"]
    for m in results:
        ratio = f"{m.rate / sync[m.opponents]:.1f}x" if sync.get(m.opponents) else ""
        lines.append(f"| 3x {m.opponents} | {m.subject} | {m.envs} | {m.rate:,.0f} | {ratio} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = OneLineParser(prog="python -m benchmarks.bench_vector_env", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=positive_float, default=5.0, help="wall time per subject (default 5)")
    p.add_argument("--envs", type=positive_int, default=256, help="N of the vector entry point and sync (default 256)")
    p.add_argument(
        "--async-envs",
        type=nonnegative_int,
        default=os.cpu_count() or 1,
        help="N (worker processes) of AsyncVectorEnv; 0 leaves it out (default: the number of cores)",
    )
    p.add_argument(
        "--opponents", default="heuristic,random", help="comma-separated opponent names (default heuristic,random)"
    )
    p.add_argument("--episode", default="game", choices=["game", "round", "hand"], help="episode (default game)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = machine_info(None)
    print(f"python {info['python']}, numpy {info['numpy']}, gymnasium {gymnasium.__version__}")
    print(f"{info['platform']}; {info['cpu']}; {info['cpus']} cpus; clock: wall time, {args.seconds:g} s per subject")
    print(f"Barbu-v1, learner in seat 0, episode {args.episode!r}, random legal learner actions, seed {args.seed}")
    print()
    results = run(args.opponents.split(","), args.envs, args.async_envs, args.seconds, args.episode, args.seed)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
