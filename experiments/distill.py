"""Distil a search agent into a network policy: DAgger with ``pimc`` as the teacher.

``python -m experiments.distill --student ppo --teacher pimc --games 96 --rounds 1 --out runs/distill``

Search is the strongest player barbu has, and far too slow to play against in PPO's
rollouts (``pimc`` at 32 worlds decides about a hundred times a second per core; PPO
wants tens of thousands). So its decisions are used as labels instead, the way AlphaGo's
and Stockfish NNUE's networks learn from search (Ross et al. 2011, *DAgger*):

1. **labels**: games on the batched engine with the student in every seat; at every
   decision with more than one legal action the teacher is asked too (one batched call
   per step), and the observation, the mask and the teacher's action are kept; each
   decision then plays the teacher's action with probability ``beta``, else the
   student's most likely one, so the positions are the ones the student reaches itself
   (what it will face at play time), not only the teacher's;
2. **fit**: the student's policy is trained to pick the teacher's actions (masked
   cross-entropy, the trainer's ``imitation_update`` without its value term: labels have
   no returns), starting from the student's own weights, the last ``holdout`` share of
   games kept aside to measure agreement with the teacher before and after;
3. repeat for ``rounds`` (each round's games are played by the student of the round
   before, the labels of every round kept).

Label collection runs in ``workers`` processes (each its own games and seeds). The
result is a checkpoint like the trainer's (``<out>/distilled.pt``, with this run's
arguments and figures), playable as ``barbu eval --agents <out>/distilled.pt,pimc,pimc,pimc``;
``<out>/summary.json`` has the agreement by decision kind per round.

An experiment, not installed: it runs from a checkout (``python -m experiments.distill``),
and what it measured (agreement rose, play got worse) is in ``experiments/README.md``.
The games are played by ``barbu_env.game.driver.play`` (forced decisions without asking).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from barbu_env.agents import ask, make_agent
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.game.constants import Phase
from barbu_env.game.driver import play
from barbu_env.game.vector import VectorBarbu
from barbu_env.util.files import write_text
from barbu_models.policy import BarbuActorCritic, MaskedCategorical, load_checkpoint, save_checkpoint
from barbu_training.config_cli import add_field_flags
from barbu_training.expert import KINDS, decision_kind, held_out, worker_games
from barbu_training.policy_agent import PolicyAgent


@dataclass
class DistillArgs:
    """A distillation run's settings (each is a ``--field`` flag)."""

    student: str = "ppo"
    """The network to start from: a shipped policy's name or a checkpoint path."""
    teacher: str = "pimc"
    """The agent whose decisions are the labels (an agent spec: ``pimc:worlds=64``)."""
    rules: str = "standard"
    """Rules preset of the games."""
    games: int = 96
    """Whole games per round (spread over the workers)."""
    rounds: int = 1
    """Rounds of labels and fitting (DAgger iterations)."""
    beta: float = 0.5
    """Probability that a decision plays the teacher's action rather than the student's."""
    workers: int = 2
    """Label-collecting processes (one per core)."""
    games_per_batch: int = 16
    """Games each worker steps together (the teacher searches all their decisions at once)."""
    epochs: int = 4
    """Passes over all labels so far in each fit."""
    minibatch_size: int = 512
    """Labels per gradient step."""
    learning_rate: float = 3e-4
    """Adam learning rate (constant)."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    holdout: float = 0.1
    """Share of each round's games (the last ones) kept out of the fit to measure agreement."""
    seed: int = 1
    """Seed of the games, the teacher's and the fit's generators."""
    out: str = "runs/distill"
    """Folder of the result (``distilled.pt``, ``summary.json``)."""
    torch_threads: int = 2
    """Threads of the fit."""


# --- labels -------------------------------------------------------------------------


def collect_labels(job: tuple[str, DistillArgs, int, int]) -> dict[str, np.ndarray]:
    """One worker's labels: ``games`` whole games with the checkpoint at ``path`` in every
    seat, seeded by ``seed``. Returns ``obs``, ``masks``, ``actions`` (the teacher's) and
    ``game`` (the game's number in the worker) of every decision with a choice."""
    path, args, games, seed = job
    torch.set_num_threads(1)
    student, _ = load_checkpoint(path)
    student_agent = PolicyAgent(student, seed=seed)
    teacher = make_agent(args.teacher, seed=seed, rules=args.rules)
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {"obs": [], "masks": [], "actions": [], "game": []}
    done_games = 0

    def decide(rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, _seats: np.ndarray) -> np.ndarray:
        # The decisions with a choice (the driver plays forced ones): the teacher's label,
        # then the teacher's or the student's action played.
        taught = ask(teacher, obs, masks)
        own = student_agent.act_batch(obs, masks)
        out["obs"].append(obs.copy())  # the engine's buffers when every game is asked
        out["masks"].append(masks.view(bool).copy())
        out["actions"].append(taught)
        out["game"].append(done_games + rows)
        return np.where(rng.random(len(rows)) < args.beta, taught, own)

    while done_games < games:
        B = min(args.games_per_batch, games - done_games)
        env = VectorBarbu(B, args.rules, seed=int(rng.integers(2**31)))
        play(env, decide, start=env.reset(), ask_forced=False)
        done_games += B
    return {k: np.concatenate(v) for k, v in out.items()}


def label_round(path: str, args: DistillArgs, round_index: int) -> dict[str, np.ndarray]:
    """This round's labels from ``args.workers`` processes; ``holdout`` marks the last
    share of each worker's games."""
    shares = worker_games(args.games, args.workers)
    jobs = [(path, args, n, args.seed * 1000 + round_index * 100 + w) for w, n in enumerate(shares)]
    if len(jobs) == 1:
        parts = [collect_labels(jobs[0])]
    else:
        with mp.get_context("fork").Pool(len(jobs)) as pool:
            parts = pool.map(collect_labels, jobs)
    for part, (_p, _a, n, _s) in zip(parts, jobs):
        part["holdout"] = part.pop("game") >= n - held_out(n, args.holdout)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# --- fit ----------------------------------------------------------------------------


def agreement(model: BarbuActorCritic, data: dict[str, np.ndarray]) -> dict[str, float]:
    """Share of decisions where the model's most likely action is the teacher's, in all and
    by decision kind (kinds with no decision left out)."""
    with torch.no_grad():
        picks = []
        for lo in range(0, len(data["obs"]), 8192):
            o = torch.as_tensor(data["obs"][lo : lo + 8192])
            m = torch.as_tensor(data["masks"][lo : lo + 8192])
            picks.append(model.distribution(o, m).mode().numpy())
    same = np.concatenate(picks) == data["actions"]
    kinds = decision_kind(data["obs"])
    result = {"all": float(same.mean()), "decisions": int(len(same))}
    for phase in Phase:
        if phase != Phase.GAME_OVER and (kinds == phase).any():
            result[KINDS[phase]] = float(same[kinds == phase].mean())
    return result


def fit(model: BarbuActorCritic, data: dict[str, np.ndarray], args: DistillArgs, gen: torch.Generator) -> float:
    """``epochs`` passes of masked cross-entropy towards the teacher's actions; returns the
    last epoch's mean loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    obs, masks = torch.as_tensor(data["obs"]), torch.as_tensor(data["masks"])
    actions = torch.as_tensor(data["actions"])
    model.train()
    for _epoch in range(args.epochs):
        perm = torch.randperm(len(obs), generator=gen)
        losses = []
        for lo in range(0, len(obs), args.minibatch_size):
            idx = perm[lo : lo + args.minibatch_size]
            logits, _value = model(obs[idx])
            loss = -MaskedCategorical(logits, masks[idx]).log_prob(actions[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    return float(np.mean(losses))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = DistillArgs(**vars(add_field_flags(parser, DistillArgs).parse_args(argv)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.torch_threads)
    gen = torch.Generator().manual_seed(args.seed)
    path = str(checkpoint_path(args.student))  # the checkpoint each round's games are played by
    model, _ = load_checkpoint(path)
    train: list[dict[str, np.ndarray]] = []
    held: list[dict[str, np.ndarray]] = []
    history = []
    start = time.time()

    for r in tqdm(range(args.rounds), desc="rounds"):
        # --- labels: the current student plays, the teacher labels every choice ---
        t0 = time.time()
        labels = label_round(path, args, r)
        label_seconds = time.time() - t0
        keep = ~labels.pop("holdout")
        train.append({k: v[keep] for k, v in labels.items()})
        held.append({k: v[~keep] for k, v in labels.items()})
        everything = {k: np.concatenate([d[k] for d in train]) for k in train[0]}
        holdout = {k: np.concatenate([d[k] for d in held]) for k in held[0]}

        # --- fit: from the current weights, on every round's labels ---
        before = agreement(model, holdout)
        t0 = time.time()
        loss = fit(model, everything, args, gen)
        after = agreement(model, holdout)
        history.append(
            {
                "round": r,
                "labels": int(len(everything["obs"])),
                "label_seconds": round(label_seconds, 1),
                "fit_seconds": round(time.time() - t0, 1),
                "loss": round(loss, 4),
                "agreement_before": before,
                "agreement_after": after,
            }
        )
        path = str(out / "distilled.pt")
        save_checkpoint(path, model, distill_config=dataclasses.asdict(args), history=history)
        tqdm.write(
            f"round {r}: {len(labels['obs'])} labels in {label_seconds:.0f} s; agreement with "
            f"{args.teacher} on held-out decisions {before['all']:.3f} -> {after['all']:.3f}"
        )

    summary = {"args": dataclasses.asdict(args), "seconds": round(time.time() - start, 1), "rounds": history}
    write_text(out / "summary.json", json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
