"""sb3-contrib ``MaskablePPO`` on ``Barbu-v1``: one learning seat against chosen opponents.

The environment is ``"Barbu-v1"`` (``barbu_env/envs/gym_env.py``), ``num_envs`` of them
stepped together on the batched engine as one SB3 ``VecEnv``
(``barbu_env.envs.make_sb3_vec``, ``barbu_env/envs/sb3_vec.py``): the same games as SB3's
``DummyVecEnv`` of ``Barbu-v1`` seeded alike (``--dummy-vec-env true`` trains on that, the
reference), its environments stepping faster (docs/benchmarks.md). The learner's own settled hand
scores are its rewards, and ``MaskablePPO`` reads the legal actions from the
environment's ``action_masks()``. The learner's seat rotates over the four seats, one
per game, so that it learns to declare and to defend from every seat. Illegal actions
raise (``illegal_action="raise"``): with masks there are none.

The model is saved as ``out/model.zip``, an agent for ``barbu eval`` (the loader is
``barbu_training.external_agents.load_sb3_agent``)::

    python -m examples.sb3_maskable_ppo --opponents random --minutes 15 --out runs/sb3
    barbu eval --agents runs/sb3/model.zip,random,random,random --games 1000 --trust-pickled

Every field of ``Args`` is a flag (``--n-steps 256``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium

from barbu_env.util.extras import MissingExtraError, needs
from barbu_env.util.files import replacing, write_text

try:
    with needs("train", "examples.sb3_maskable_ppo"):  # one line if the extra is missing
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env

        from barbu_env.envs import make_sb3_vec
except MissingExtraError as e:  # run as a script: the one line, without a traceback
    if __name__ != "__main__":
        raise
    raise SystemExit(e) from None

import barbu_env.envs.gym_env  # noqa: F401  (registers Barbu-v1)
from barbu_training.config_cli import add_field_flags


@dataclass
class Args:
    opponents: str = "random"
    """The three opponents: one agent spec for all (``random``, ``heuristic``, a checkpoint
    path) or three, comma-separated, in seat order after the learner."""
    rules: str = "standard"
    """Rules preset or YAML path."""
    minutes: float = 15.0
    """Stop training after this many minutes (0: only ``total_timesteps`` counts)."""
    total_timesteps: int = 10_000_000
    """Stop after this many learner decisions."""
    num_envs: int = 64
    """Games stepping together (one batch of the engine)."""
    dummy_vec_env: bool = False
    """Step the games one at a time in SB3's ``DummyVecEnv`` of ``Barbu-v1`` (the same games, slower)."""
    n_steps: int = 64
    """Decisions per game per rollout (the rollout is ``num_envs * n_steps``)."""
    batch_size: int = 512
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.99
    """Discount per learner decision (a hand is about 14 of them)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    ent_coef: float = 0.01
    """Entropy bonus weight."""
    reward_scale: float = 0.01
    """Factor on the settled hand scores (points) to make rewards."""
    net_arch: str = "256,256"
    """Hidden layer widths of the policy and the value networks."""
    skip_forced: bool = True
    """Play the learner's forced decisions (one legal action) for it."""
    seed: int = 0
    """Seed of the environments and the network."""
    torch_threads: int = 2
    """Torch threads."""
    out: str = "runs/sb3"
    """Folder for ``model.zip`` and ``summary.json``."""


class WallClockLimit(BaseCallback):
    """Stops ``learn`` once ``minutes`` have passed (checked after every environment step)."""

    def __init__(self, minutes: float):
        super().__init__()
        self.deadline = time.monotonic() + 60 * minutes if minutes > 0 else float("inf")

    def _on_step(self) -> bool:
        return time.monotonic() < self.deadline


def make_env(args: Args):
    """The ``num_envs`` games of ``Barbu-v1`` the model trains on, one SB3 ``VecEnv``."""
    specs = [s.strip() for s in args.opponents.split(",")]
    env_kwargs = {
        "opponents": specs[0] if len(specs) == 1 else specs,
        "seat": "rotate",
        "rules": args.rules,
        "reward_scale": args.reward_scale,
        "skip_forced": args.skip_forced,
        "illegal_action": "raise",
    }
    if args.dummy_vec_env:
        return make_vec_env(lambda: gymnasium.make("Barbu-v1", **env_kwargs), n_envs=args.num_envs, seed=args.seed)
    return make_sb3_vec(args.num_envs, seed=args.seed, **env_kwargs)


def make_model(args: Args, env) -> MaskablePPO:
    """The untrained ``MaskablePPO`` of ``args`` on ``env``."""
    return MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        learning_rate=args.learning_rate,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        ent_coef=args.ent_coef,
        policy_kwargs={"net_arch": [int(w) for w in args.net_arch.split(",")]},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )


def train(args: Args) -> dict:
    """Train, save ``out/model.zip`` and ``out/summary.json`` (each whole or not at all:
    ``barbu_env.util.files``), and return the summary (steps, minutes, steps/s)."""
    torch.set_num_threads(args.torch_threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = make_model(args, make_env(args))
    start = time.monotonic()
    model.learn(total_timesteps=args.total_timesteps, callback=WallClockLimit(args.minutes))
    minutes = (time.monotonic() - start) / 60
    with replacing(out / "model.zip") as tmp, open(tmp, "wb") as f:
        model.save(f)
    summary = {
        "model": str(out / "model.zip"),
        "timesteps": int(model.num_timesteps),
        "minutes": round(minutes, 2),
        "steps_per_second": round(model.num_timesteps / (60 * minutes), 1),
        "args": dataclasses.asdict(args),
    }
    write_text(out / "summary.json", json.dumps(summary, indent=2))
    return summary


def build_parser() -> argparse.ArgumentParser:
    """One ``--field`` per ``Args`` field."""
    parser = argparse.ArgumentParser(prog="python -m examples.sb3_maskable_ppo", description=__doc__.split("\n\n")[0])
    return add_field_flags(parser, Args)


def main(argv: list[str] | None = None) -> int:
    args = Args(**vars(build_parser().parse_args(argv)))
    try:
        summary = train(args)
    except OSError as e:  # barbu_env.util.files.OutputError: a file not written, named
        print(f"python -m examples.sb3_maskable_ppo: error: {e}", file=sys.stderr)
        return 1
    print(
        f"MaskablePPO: {summary['timesteps']:,} learner decisions in {summary['minutes']:.1f} min "
        f"({summary['steps_per_second']:,.0f}/s); model saved to {summary['model']}"
    )
    print(f"evaluate: barbu eval --agents {summary['model']},random,random,random --games 1000 --trust-pickled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
