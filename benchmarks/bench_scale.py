"""How training scales with the hardware: one script, one run, figures side by side.

``python -m benchmarks.bench_scale`` prints, in one run on this machine:

1. rollout decisions/s of the Ray rollout workers (``barbu_training.workers``) for 1, 2, 4, ...
   workers up to the cores, each playing ``--games`` games, the policy fixed;
2. the PPO update's samples/s (transitions times epochs per second) on each device present
   (the CPU, and CUDA or MPS when there is one), on one real rollout;
3. decisions/s of a short real training run (``--iterations`` iterations of
   ``configs/train/default.yaml`` at ``--games`` games per worker, imitation left out)
   for every setting, all on the same games (``--games`` times the most workers):
   in-process (``workers 0``), then each worker count without and with ``overlap``, on
   the learner's best device; with overlap on a CPU learner, also with the learner's
   ``torch_threads`` cut to the cores the workers leave (``preflight.learner_threads``: workers and
   update threads competing for the same cores slow both);
4. on a CUDA machine only: a two-minute training run with ``device: cuda``, its checkpoint
   evaluated by ``barbu eval --device cuda`` against 3x heuristic, and loaded on the CPU.

Every setting plays with the weights of ``--init`` (default: the shipped ``ppo``, whose
network is ``default.yaml``'s): a trained policy's games are the ones a run spends its
time on, and a fresh network's are not (an empty string: a fresh network). ``--quick``
shrinks everything to a smoke run (the tests use it). Nothing is timed in an
assertion; docs/training.md quotes the figures with the machine they came from.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

from barbu_env.util.extras import needs

with needs("train", "benchmarks.bench_scale"):  # one line if the extra is missing
    import torch

from barbu_training.config import Args, model_config
from barbu_training.config_cli import load_args
from barbu_training.preflight import OversubscribedWarning, learner_threads


def worker_counts(cores: int) -> list[int]:
    """1, 2, 4, ... up to ``cores`` (and ``cores`` itself).

    >>> worker_counts(6), worker_counts(1)
    ([1, 2, 4, 6], [1])
    """
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


def devices() -> list[str]:
    """The devices present: the CPU, then CUDA and MPS where there are."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        found.append("mps")
    return found


def base_args(games: int, run_dir: str, **changes) -> Args:
    """``default.yaml``'s run at ``games`` games per rollout, PPO from the first iteration
    (from ``init``'s weights if it names a checkpoint), no evaluations."""
    fields = dict(
        num_games=games,
        bc_iterations=0,
        eval_every=0,
        final_eval_games=0,
        progress=False,
        run_dir=run_dir,
        exp_name="bench_scale",
        total_decisions=10**12,
    )
    return load_args("configs/train/default.yaml", fields | changes)


def start_model(args: Args):
    """The network the settings play with: ``init``'s weights, or a fresh one seeded by ``seed``."""
    from barbu_env.agents.pretrained import checkpoint_path
    from barbu_models.policy import BarbuActorCritic, load_checkpoint

    if args.init:
        return load_checkpoint(checkpoint_path(args.init))[0]
    torch.manual_seed(args.seed)
    return BarbuActorCritic(model_config(args))


def rollout_rate(args: Args, workers: int, rounds: int) -> float:
    """Decisions/s of ``workers`` rollout workers over ``rounds`` rollouts (after one to warm up)."""
    from barbu_env.game.rules import load_rules
    from barbu_training.workers import WorkerGroup

    args = dataclasses.replace(args, workers=workers, num_games=args.num_games * workers)
    group = WorkerGroup(args, load_rules(args.rules))
    try:
        weights = start_model(args).state_dict()
        group.gather(group.launch(weights, {}, 1, ""))  # numba's caches, the first forward passes
        t0, decisions = time.perf_counter(), 0
        for k in range(rounds):
            decisions += group.gather(group.launch(weights, {}, 2 + k, "")).decisions
        return decisions / (time.perf_counter() - t0)
    finally:
        group.close()


def update_rate(args: Args, device: str) -> float:
    """Samples/s of ``ppo_update`` on ``device`` over one real rollout (transitions x epochs)."""
    from barbu_env.game.rules import load_rules
    from barbu_training.ppo import as_tensors, ppo_update
    from barbu_training.precision import resolve_precision
    from barbu_training.rollout import Collector, rollout_generators

    model = start_model(args)
    rollout = Collector(args, load_rules(args.rules)).collect(model, {}, *rollout_generators(args.seed, 1))
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    batch = as_tensors(rollout, args.central_critic)
    dtype = resolve_precision(args.precision, torch.device(device))
    gen = torch.Generator().manual_seed(0)
    one = dataclasses.replace(args, update_epochs=1)
    ppo_update(model, optimizer, batch, one, gen, dtype)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    ppo_update(model, optimizer, batch, args, gen, dtype)
    if device == "cuda":
        torch.cuda.synchronize()
    return len(rollout.actions) * args.update_epochs / (time.perf_counter() - t0)


def training_rate(args: Args, iterations: int) -> float:
    """Decisions/s of ``iterations`` training iterations (rollout and update; after a first one)."""
    from barbu_training.run import Trainer

    trainer = Trainer(args)
    try:
        trainer.iterate()
        t0, before = time.perf_counter(), trainer.decisions
        for _ in range(iterations):
            trainer.iterate()
        return (trainer.decisions - before) / (time.perf_counter() - t0)
    finally:
        trainer.close_workers()


def gpu_check(run_dir: str, minutes: float, games: int, init: str) -> list[str]:
    """Two minutes of training on CUDA, its checkpoint played by ``barbu eval --device
    cuda`` and loaded on the CPU; the lines to print."""
    from barbu_env.cli.main import main as barbu
    from barbu_models.policy import load_checkpoint
    from barbu_training.train import train

    args = base_args(games, run_dir, device="cuda", exp_name="gpu_check", time_budget_minutes=minutes, init=init)
    summary = train(args)
    path = Path(summary["run"]) / "checkpoints" / "latest.pt"
    lines = [f"cuda training: {summary['decisions']:,} decisions in {summary['minutes']:.2f} min"]
    code = barbu(["eval", "--agents", f"{path},heuristic,heuristic,heuristic", "--games", "40"]
                 + ["--device", "cuda", "--no-progress"])  # fmt: skip
    lines.append(f"barbu eval --device cuda: exit {code}")
    model, payload = load_checkpoint(path)
    on_cpu = {str(t.device) for t in model.state_dict().values()}
    lines.append(f"checkpoint loads on the CPU: tensors on {sorted(on_cpu)}, iteration {payload['iteration']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=128, help="games per worker (and of the in-process path)")
    parser.add_argument("--iterations", type=int, default=2, help="timed training iterations per setting")
    parser.add_argument("--rounds", type=int, default=2, help="timed rollouts per worker count")
    parser.add_argument("--max-workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--gpu-minutes", type=float, default=2.0)
    parser.add_argument("--init", default="ppo", help="the policy every setting plays (empty: a fresh network)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 games, small network, 1 round")
    ns = parser.parse_args(argv)
    small = dict(hidden=32, layers=1, card_embed=4, update_epochs=1, minibatch_size=512) if ns.quick else {}
    games = 2 if ns.quick else ns.games
    run_dir = tempfile.mkdtemp(prefix="bench_scale_")
    try:
        import ray

        ray.init(num_cpus=max(ns.max_workers, 1), include_dashboard=False, log_to_driver=False)
        cores = os.cpu_count() or 1
        print(f"machine: {cores} cores, devices {', '.join(devices())}, torch {torch.__version__}")
        args = base_args(games, run_dir, init="" if ns.quick else ns.init, **small)
        print(f"policy played: {args.init or 'a fresh network'}")
        print(f"\nrollout workers, {games} games each (decisions/s):")
        for n in worker_counts(min(ns.max_workers, cores)):
            rate = rollout_rate(args, n, 1 if ns.quick else ns.rounds)
            print(f"  workers {n:>3}: {rate:>12,.0f}  ({rate / n:,.0f} per worker)")
        print("\nPPO update (samples/s: transitions x epochs):")
        for device in devices():
            print(f"  {device:>5}: {update_rate(dataclasses.replace(args, device=device), device):>12,.0f}")
        learner = devices()[1] if len(devices()) > 1 else "cpu"
        print(f"\ntraining, learner on {learner} (decisions/s, rollout and update):")
        counts = worker_counts(min(ns.max_workers, cores))
        threads = args.torch_threads
        settings = [(0, False, threads)] + [(n, o, threads) for n in counts for o in (False, True)]
        if learner == "cpu":  # overlapped workers leave the update fewer cores
            settings += [(n, True, learner_threads(cores, n)) for n in counts if learner_threads(cores, n) != threads]
        total = games * counts[-1]  # every setting plays the same games
        iterations = 1 if ns.quick else ns.iterations
        for n, overlap, t in settings:
            run = dataclasses.replace(
                args, device=learner, workers=n, overlap=overlap, num_games=total, torch_threads=t
            )
            with warnings.catch_warnings():  # the crowded settings are measured on purpose
                warnings.simplefilter("ignore", OversubscribedWarning)
                rate = training_rate(run, iterations)
            what = f"workers {n:>3}{' overlap' if overlap else '        '} torch_threads {t:>3}"
            print(f"  {what}: {rate:>12,.0f}  ({run.num_games} games)")
        if "cuda" in devices():
            print("\nGPU check:")
            for line in gpu_check(run_dir, ns.gpu_minutes, games * cores, args.init):
                print(f"  {line}")
        ray.shutdown()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
