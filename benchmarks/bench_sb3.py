"""MaskablePPO on ``Barbu-v1`` on SB3's ``DummyVecEnv`` and on ``make_sb3_vec``, side by side in one run.

Run ``python -m benchmarks.bench_sb3`` from a checkout (the ``train`` extra; ``--help``
for the options; ``--quick`` runs every part at a tiny size, a smoke test). The two subjects
are the two environments of ``examples/sb3_maskable_ppo.py`` (its ``make_env``: N games of
``Barbu-v1``, the learner's seat rotating, ``skip_forced``, ``reward_scale=0.01``, three
``--opponents``), built with the same seed, so they play the same games:

=================  ==============================================================
subject            the SB3 ``VecEnv``
=================  ==============================================================
``DummyVecEnv``    ``make_vec_env("Barbu-v1", n_envs=N, seed=0, ...)``: N
                   ``Barbu-v1`` stepped one after the other (``--dummy-vec-env
                   true``), the reference
``make_sb3_vec``   ``barbu_env.envs.make_sb3_vec(N, seed=0, ...)``: the N games in one
                   batch of the engine, their opponents asked together
=================  ==============================================================

Three parts, each subject beside the reference and the ratio of their rates:

1. The environment alone: ``step`` with a uniformly random legal action per game, drawn
   from ``get_action_masks`` (sb3-contrib's call, as ``MaskablePPO`` makes it), for
   ``--seconds`` of wall time after a warm-up, at each N of ``--envs``. Learner decisions
   per second (N per ``step``; the opponents' moves between them included).
2. The whole learning loop: the example's ``MaskablePPO`` (its hyperparameters, the same
   for both; torch on ``--torch-threads`` threads) learns ``--rollouts`` rollouts of
   N x ``n_steps`` decisions at each N; learner decisions per second of ``learn``'s wall
   time (the model built before the clock starts), and that time split into collecting
   the rollouts (the policy acting, the environment stepping) and the update.
3. Learning per decision (``--budget`` decisions, 0 leaves it out): the example's
   ``train`` on each subject, ``--train-envs`` games, seed 0, then each model (greedy)
   evaluated in duplicate against three of the opponents, ``--eval-games`` games on the
   deal seed ``--eval-seed`` (used for nothing else): mean score per game with its 95%
   interval, and the largest difference between the two models' parameters (the games
   being the same, the two runs see the same data; 0 when torch computes both alike).

Wall time, so run it on an otherwise idle machine, or compare the ratios.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.callbacks import BaseCallback

from barbu_env.evaluation.tournament import evaluate
from barbu_env.util.argtypes import OneLineParser, nonnegative_int, positive_float, positive_int
from benchmarks.machine import machine_info
from examples import sb3_maskable_ppo as example

SUBJECTS = {"DummyVecEnv": True, "make_sb3_vec": False}  # name -> Args.dummy_vec_env
WARM_UP_STEPS = 5
#: The deals of part 3's evaluation: a seed used for nothing else.
EVAL_SEED = 5901


def rate_table(title: str, rates: dict[tuple[str, int], float]) -> str:
    """One line per N: each subject's rate and the ratio of ``make_sb3_vec``'s to ``DummyVecEnv``'s."""
    lines = [f"| N | {title}: DummyVecEnv | make_sb3_vec | ratio |", "|---|---|---|---|"]
    for n in sorted({n for _, n in rates}):
        dummy, ours = rates["DummyVecEnv", n], rates["make_sb3_vec", n]
        lines.append(f"| {n} | {dummy:,.0f} | {ours:,.0f} | **{ours / dummy:.1f}x** |")
    return "\n".join(lines)


def env_rate(args: example.Args, seconds: float) -> float:
    """Learner decisions per second of the environment alone (part 1)."""
    env = example.make_env(args)
    rng = np.random.default_rng(0)
    env.reset()
    steps, start = -WARM_UP_STEPS, 0.0
    while steps <= 0 or time.perf_counter() - start < seconds:
        masks = get_action_masks(env)
        env.step(np.where(masks, rng.random(masks.shape), -1.0).argmax(axis=1))
        steps += 1
        if steps == 0:
            start = time.perf_counter()
    rate = steps * args.num_envs / (time.perf_counter() - start)
    env.close()
    return rate


class RolloutClock(BaseCallback):
    """The wall time ``learn`` spends collecting rollouts (the policy acting and the
    environment stepping); the rest is the update."""

    def __init__(self):
        super().__init__()
        self.seconds = 0.0

    def _on_rollout_start(self) -> None:
        self.start = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.seconds += time.perf_counter() - self.start

    def _on_step(self) -> bool:
        return True


def learn_rate(args: example.Args, rollouts: int) -> tuple[float, float, float]:
    """Part 2: learner decisions per second of ``MaskablePPO.learn``, and its seconds
    collecting and updating."""
    model = example.make_model(args, example.make_env(args))
    clock = RolloutClock()
    start = time.perf_counter()
    model.learn(total_timesteps=rollouts * args.num_envs * args.n_steps, callback=clock)
    seconds = time.perf_counter() - start
    return model.num_timesteps / seconds, clock.seconds, seconds - clock.seconds


def equal_learning(args: example.Args, eval_games: int, opponents: str) -> list[str]:
    """Part 3's lines: each subject's training and its evaluation, then the parameters' difference."""
    lines = ["| subject | decisions | minutes | decisions/s | score per game [95% interval] |", "|---|---|---|---|---|"]
    weights = []
    with tempfile.TemporaryDirectory() as folder:
        for name, dummy in SUBJECTS.items():
            out = Path(folder) / name
            summary = example.train(dataclasses.replace(args, dummy_vec_env=dummy, out=str(out)))
            agent = f"{out / 'model.zip'}:trust=true"
            score = evaluate([agent, *[opponents] * 3], games=eval_games, seed=EVAL_SEED, workers=1).entries[0].score
            interval = f"[{score.ci95[0]:+.1f}, {score.ci95[1]:+.1f}]" if score.ci95 else ""
            lines.append(
                f"| {name} | {summary['timesteps']:,} | {summary['minutes']:.1f} | "
                f"{summary['steps_per_second']:,.0f} | {score.mean:+.1f} {interval} |"
            )
            weights.append(MaskablePPO.load(out / "model.zip", device="cpu").policy.state_dict())
    difference = max((weights[0][k] - weights[1][k]).abs().max().item() for k in weights[0])
    return [*lines, "", f"largest difference between the two models' parameters: {difference:g}"]


def parse_args(argv: list[str] | None = None):
    p = OneLineParser(prog="python -m benchmarks.bench_sb3", description=__doc__.split("\n")[0])
    p.add_argument("--envs", default="64,256", help="comma-separated N of parts 1 and 2 (default 64,256)")
    p.add_argument("--seconds", type=positive_float, default=10.0, help="part 1's wall time per subject (default 10)")
    p.add_argument("--rollouts", type=positive_int, default=2, help="part 2's rollouts per subject (default 2)")
    p.add_argument("--n-steps", type=positive_int, default=example.Args.n_steps, help="decisions per game per rollout")
    p.add_argument("--budget", type=nonnegative_int, default=300_000, help="part 3's decisions per subject (0: skip)")
    p.add_argument("--train-envs", type=positive_int, default=64, help="part 3's N (default 64)")
    p.add_argument("--eval-games", type=positive_int, default=400, help="part 3's evaluation games (default 400)")
    p.add_argument("--opponents", default="random", help="the three opponents' agent spec (default random)")
    p.add_argument("--torch-threads", type=positive_int, default=1, help="torch threads (default 1)")
    p.add_argument("--quick", action="store_true", help="every part at a tiny size (a test's smoke run)")
    args = p.parse_args(argv)
    if args.quick:
        args.envs, args.seconds, args.rollouts, args.n_steps = "4", 0.2, 1, 16
        args.budget, args.train_envs, args.eval_games = 256, 4, 4
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    info = machine_info(None)
    print(f"python {info['python']}, numpy {info['numpy']}, torch {torch.__version__}")
    print(f"{info['platform']}; {info['cpu']}; {info['cpus']} cpus; wall time")
    base = example.Args(opponents=args.opponents, n_steps=args.n_steps, torch_threads=args.torch_threads, minutes=0)
    print(f"Barbu-v1 against 3x {args.opponents}, learner seat rotating, skip_forced; the example's MaskablePPO:")
    print(f"n_steps {base.n_steps}, batch_size {base.batch_size}, n_epochs {base.n_epochs}, net_arch {base.net_arch}")
    sizes = [int(n) for n in args.envs.split(",")]
    steps, loop = {}, {}
    for n in sizes:
        for name, dummy in SUBJECTS.items():
            steps[name, n] = env_rate(dataclasses.replace(base, num_envs=n, dummy_vec_env=dummy), args.seconds)
    print(f"\n1. The environment alone: learner decisions/s, random legal actions, {args.seconds:g} s each\n")
    print(rate_table("decisions/s", steps))
    split = ["| N | subject | seconds collecting | seconds updating |", "|---|---|---|---|"]
    for n in sizes:
        for name, dummy in SUBJECTS.items():
            loop[name, n], collecting, updating = learn_rate(
                dataclasses.replace(base, num_envs=n, dummy_vec_env=dummy), args.rollouts
            )
            split.append(f"| {n} | {name} | {collecting:.1f} | {updating:.1f} |")
    print(f"\n2. MaskablePPO.learn, {args.rollouts} rollouts of N x {args.n_steps}: learner decisions/s\n")
    print(rate_table("decisions/s", loop))
    print()
    print("\n".join(split))
    if args.budget:
        train = dataclasses.replace(base, num_envs=args.train_envs, total_timesteps=args.budget)
        print(f"\n3. Equal learning: {args.budget:,} decisions each at N = {args.train_envs}, then {args.eval_games}")
        print(f"   duplicate games against 3x {args.opponents} (deal seed {EVAL_SEED})\n")
        print("\n".join(equal_learning(train, args.eval_games, args.opponents)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
