"""Expert iteration: a network taught by the guided search, with soft targets.

``python -m barbu_training.expert --student ppo-finetuned --games 96 --out runs/expert``

The guided search (``pimc-ppo``: the student as every seat's rollout policy) plays better
than the student where its rollouts can see what a decision leads to. This script moves
that knowledge into the network, so that it plays without search (one forward pass per
decision):

1. **positions**: whole games on the batched engine with the student in every seat,
   greedy (the positions it reaches itself). Every decision of the kinds where the
   search and the policy disagree most is labelled — the declarer's contract, trump and
   Domino rank, every doubling turn, the declarer's cards in Trumps and Domino — and a
   share (``other_share``) of the rest;
2. **labels**: for each labelled decision, the search's value of every legal action
   (``PimcAgent.search`` without pruning: the mean settled score of the hand for the
   player to act over ``worlds`` sampled deals, the contract's baseline subtracted when
   declaring), all labelled decisions of a step searched in one batch;
3. **soft targets**: ``target(a) ∝ policy(a) · exp((Q(a) − max Q) / temperature)``, the
   student's own probabilities improved by the search's values (the KL-regularised
   improvement step: the action distribution that maximises ``E[Q] − temperature ·
   KL(· ‖ policy)``). Actions the search finds equal keep the policy's odds, an action
   worth ``temperature`` points more gains a factor e. Not one-hot labels: imitating the
   search's argmax made a worse player (``experiments/README.md``, ``distill.py``);
4. **fit**: from the student's weights, minimise ``KL(target ‖ network)`` on the labelled
   decisions, and keep the value head where it was (its outputs at collection are its
   targets; a privileged critic, which reads the hidden hands and shares no weight with
   the policy, is left as it is), with the last ``holdout`` share of each worker's games
   kept aside to report agreement and KL before and after, by decision kind (``holdout``
   0: none kept aside, nothing reported).

The result, ``<out>/expert.pt``, is a checkpoint like the trainer's: playable as
``barbu eval --agents <out>/expert.pt,pimc,pimc,pimc``, and the ``init`` and
``kl_anchor`` of the PPO stage that follows (``experiments/configs/expert-ppo.yaml``: PPO with a
small KL term toward the distilled policy). ``<out>/summary.json`` has the arguments,
the label counts and timings, and the figures by decision kind. Labels are saved in
``<out>/labels.npz`` and reused by ``--labels`` (a fit with other settings needs no new
search; the labels keep their games, so ``holdout`` applies to them again, or, for labels
of barbu before 0.12.0, the held-out games saved with them). Label collection runs in
``workers`` processes, each its own games and seeds.

In a training config, a stage with an ``expert`` mapping is such a run (``train_expert``,
``stage_expert_args``): its ``init`` the student, its folder the ``out``, and the next stage
starts from its ``expert.pt`` (``configs/train/ppo-expert.yaml``, the shipped
``ppo-expert``'s recipe).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from barbu_env.util.extras import needs
from barbu_env.util.files import error_line, replacing, write_text

with needs("train", "barbu_training.expert"):  # one line if the extra is missing
    import torch

from barbu_env.agents import make_agent
from barbu_env.agents.pimc import PimcAgent
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.game.actions import NUM_ACTIONS
from barbu_env.game.constants import Contract, Phase
from barbu_env.game.driver import play
from barbu_env.game.observation import OFFSETS
from barbu_env.game.vector import VectorBarbu
from barbu_models.device import one_thread
from barbu_models.policy import BarbuActorCritic, MaskedCategorical, load_checkpoint, save_checkpoint
from barbu_training.config import ConfigError, ExpertArgs, ValidationError, config_error
from barbu_training.config_cli import add_field_flags


def check_games(args: ExpertArgs) -> None:
    """A ConfigError if a label-collecting worker would hold out all its games (nothing to fit on)."""
    n = min(worker_games(args.games, args.workers))
    if held_out(n, args.holdout) >= n:
        raise ConfigError(
            f"games {args.games} over workers {args.workers} with holdout {args.holdout:g} leave a worker "
            f"no game to fit on (it plays {n}, holds out {held_out(n, args.holdout)}): play more games"
        )


KINDS = ("declare", "trump", "domino rank", "double", "card", "domino")  # decision kind by phase
_PHASE = slice(*OFFSETS["phase"][:2])
_CONTRACT = slice(*OFFSETS["contract"][:2])
_DECLARER = slice(*OFFSETS["declarer"][:2])


def decision_kind(obs: np.ndarray) -> np.ndarray:
    """The phase (``Phase`` value) each observation's decision belongs to."""
    return obs[:, _PHASE].argmax(axis=1)


def always_labelled(obs: np.ndarray) -> np.ndarray:
    """Which decisions (bool [B]) are labelled every time: the declarer's choices of contract,
    trump and Domino rank, doubling, and the declarer's own cards in Trumps and Domino (the
    observation is the acting seat's: seat 0 of its ``declarer`` row is the player to act)."""
    phase = decision_kind(obs)
    contract = obs[:, _CONTRACT].argmax(axis=1)
    declaring = obs[:, _DECLARER][:, 0] > 0.5
    choice = np.isin(phase, [Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK, Phase.DOUBLE])
    declarer_play = declaring & (((phase == Phase.TRICKS) & (contract == Contract.TRUMPS)) | (phase == Phase.DOMINO))
    return choice | declarer_play


def soft_targets(probs: np.ndarray, values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """``target ∝ probs · exp((values − max) / temperature)`` over each row's legal actions
    (float32 [B, 85], 0 off the mask; ``values`` NaN off the mask).

    >>> p = np.zeros((1, 85)); p[0, [1, 2]] = 0.5
    >>> q = np.full((1, 85), np.nan); q[0, [1, 2]] = [0.0, 4.0]
    >>> m = ~np.isnan(q)
    >>> t = soft_targets(p, q, m, 4.0); round(float(t[0, 2] / t[0, 1]), 3)
    2.718
    """
    q = np.where(masks, values, -np.inf)
    q = q - q.max(axis=1, keepdims=True)
    weights = np.where(masks, np.maximum(probs, 1e-6) * np.exp(q / temperature), 0.0)
    return (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)


# --- labels -------------------------------------------------------------------------


def collect(job: tuple[str, ExpertArgs, int, int]) -> dict[str, np.ndarray]:
    """One worker's labels: ``games`` whole games with the student (the checkpoint at the
    job's path) greedy in every seat, seeded by the job's seed. Returns, for each labelled
    decision, ``obs``, ``masks``, ``values`` (float32 [85], the search's action values,
    NaN off the mask), ``probs`` and ``value`` (the student's action probabilities and
    value estimate, 0 with a privileged critic: ``heads``) and ``game`` (the game's number in the worker)."""
    path, args, games, seed = job
    with one_thread():  # in this process (one worker) the fit after it keeps its torch_threads
        return _collect(path, args, games, seed)


def _collect(path: str, args: ExpertArgs, games: int, seed: int) -> dict[str, np.ndarray]:
    model, _ = load_checkpoint(path)
    searcher = make_agent(args.searcher, seed=seed, rules=args.rules, worlds=args.worlds)
    if not isinstance(searcher, PimcAgent):
        raise ValueError(f"expert: the searcher {args.searcher!r} is not a pimc search")
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "masks", "values", "probs", "value", "game")}
    done_games = 0

    def decide(rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, _seats: np.ndarray) -> np.ndarray:
        masks = masks.view(bool)
        with torch.no_grad():
            logits, value = heads(model, torch.as_tensor(obs))
            probs = MaskedCategorical(logits, torch.as_tensor(masks)).probs.numpy()
        pick = always_labelled(obs) | (rng.random(len(rows)) < args.other_share)
        if pick.any():
            sel = np.flatnonzero(pick)
            values = np.full((len(sel), NUM_ACTIONS), np.nan, dtype=np.float32)
            for j, (legal, v) in searcher.search(obs[sel], masks[sel], prune=False).items():
                values[j, legal] = v
            out["obs"].append(obs[sel].copy())
            out["masks"].append(masks[sel].copy())
            out["values"].append(values)
            out["probs"].append(probs[sel])
            out["value"].append(np.zeros(len(sel), np.float32) if value is None else value.numpy()[sel])
            out["game"].append(done_games + rows[sel])
        return probs.argmax(axis=1).astype(np.int64)  # greedy: the driver asks only decisions with a choice

    while done_games < games:
        size = min(args.games_per_batch, games - done_games)
        env = VectorBarbu(size, args.rules, seed=int(rng.integers(2**31)))
        play(env, decide, start=env.reset(), ask_forced=False)
        done_games += size
    return {k: np.concatenate(v) for k, v in out.items()}


def worker_games(games: int, workers: int) -> list[int]:
    """The games each of ``workers`` label-collecting processes plays (those that play
    any): ``games`` shared out, the first ones one more."""
    share = [games // workers + (w < games % workers) for w in range(workers)]
    return [n for n in share if n]


def held_out(games: int, holdout: float) -> int:
    """How many of a worker's ``games`` (its last) are kept out of the fit: the ``holdout``
    share, at least one (none for a ``holdout`` of 0)."""
    return 0 if holdout == 0 else max(1, round(games * holdout))


def label(path: str, args: ExpertArgs) -> dict[str, np.ndarray]:
    """Labels from ``args.workers`` processes; ``holdout`` marks each worker's last
    ``held_out`` games."""
    jobs = [(path, args, n, args.seed * 1000 + w) for w, n in enumerate(worker_games(args.games, args.workers))]
    if len(jobs) == 1:
        parts = [collect(jobs[0])]
    else:
        with mp.get_context("fork").Pool(len(jobs)) as pool:
            parts = pool.map(collect, jobs)
    for w, part in enumerate(parts):
        part["worker"] = np.full(len(part["game"]), w, np.int32)
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    data["worker_games"] = np.array([n for _p, _a, n, _s in jobs], np.int64)
    data["holdout"] = holdout_mask(data, args.holdout)
    return data


def holdout_mask(data: dict[str, np.ndarray], holdout: float) -> np.ndarray:
    """Which labels are held out: those of each worker's last ``held_out`` games (by the
    labels' ``game``, ``worker`` and ``worker_games``)."""
    games = data["worker_games"]
    last = games - np.array([held_out(int(n), holdout) for n in games], np.int64)  # a worker's first held-out game
    return data["game"] >= last[data["worker"]]


def load_labels(path: str) -> dict[str, np.ndarray]:
    """A ``labels.npz`` an earlier run wrote (``--labels``) as its arrays (no pickle read); a
    file numpy cannot read is a ConfigError of one line."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            return {k: saved[k] for k in saved.files}
    except (OSError, ValueError, EOFError, TypeError, zipfile.BadZipFile) as e:
        raise ConfigError(f"labels: cannot read {path} as expert labels ({type(e).__name__}: {str(e)[:120]})") from None


def split(data: dict[str, np.ndarray], holdout: float) -> tuple[dict, dict]:
    """The labels to fit on and those held out: by ``holdout`` where the labels keep their
    games (any made by this version), else by the ``holdout`` column saved with them."""
    data = dict(data)
    if "worker_games" in data:
        data["holdout"] = holdout_mask(data, holdout)
        for key in ("game", "worker", "worker_games"):
            data.pop(key)
        why = f"holdout {holdout:g} leaves no label to fit on: play more games, or hold fewer out"
    else:
        why = "the labels' own held-out games (older labels, saved with them) leave no label to fit on"
    held = data.pop("holdout")
    if held.all():
        raise ConfigError(why)
    return {k: v[~held] for k, v in data.items()}, {k: v[held] for k, v in data.items()}


# --- fit ----------------------------------------------------------------------------


def measure(model: BarbuActorCritic, data: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """By decision kind (and ``all``): the number of decisions, the share where the
    model's most likely action is the search's best, and the mean ``KL(target ‖ model)``."""
    if not len(data["obs"]):
        return {}
    with torch.no_grad():
        logits, _ = heads(model, torch.as_tensor(data["obs"]))
        dist = MaskedCategorical(logits, torch.as_tensor(data["masks"]))
        log_p = torch.log_softmax(dist.logits, dim=-1).numpy()
    target = data["target"]
    kl = np.where(target > 0, target * (np.log(np.maximum(target, 1e-12)) - log_p), 0.0).sum(axis=1)
    best = np.nanargmax(np.where(data["masks"], data["values"], np.nan), axis=1)
    same = log_p.argmax(axis=1) == best
    kinds = decision_kind(data["obs"])
    result = {}
    for name, rows in [("all", np.ones(len(kinds), bool))] + [
        (KINDS[p], kinds == p) for p in Phase if p != Phase.GAME_OVER
    ]:
        if rows.any():
            result[name] = {
                "decisions": int(rows.sum()),
                "agreement": round(float(same[rows].mean()), 4),
                "kl": round(float(kl[rows].mean()), 4),
            }
    return result


def heads(model: BarbuActorCritic, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The policy's logits and the value from the observations alone: the value ``None``
    for a network with a privileged critic (it reads the hidden hands, which the labels do
    not keep; its weights are its own, so fitting the policy leaves it as it was)."""
    if model.config.state_dim:
        return model.policy_head(model.features(obs)), None
    return model(obs)


def fit(model: BarbuActorCritic, data: dict[str, np.ndarray], args: ExpertArgs, gen: torch.Generator) -> float:
    """``epochs`` passes of ``KL(target ‖ network)`` plus the value head's squared error
    to its outputs at collection; returns the last epoch's mean loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    obs, masks = torch.as_tensor(data["obs"]), torch.as_tensor(data["masks"])
    target, value0 = torch.as_tensor(data["target"]), torch.as_tensor(data["value"])
    model.train()
    losses: list[float] = []
    for _epoch in range(args.epochs):
        perm = torch.randperm(len(obs), generator=gen)
        losses = []
        for lo in range(0, len(obs), args.minibatch_size):
            idx = perm[lo : lo + args.minibatch_size]
            logits, value = heads(model, obs[idx])
            log_p = torch.log_softmax(MaskedCategorical(logits, masks[idx]).logits, dim=-1)
            t = target[idx]
            policy_loss = -(t * torch.where(t > 0, log_p, torch.zeros_like(log_p))).sum(dim=1).mean()
            loss = policy_loss
            if value is not None:  # a value head on the policy's trunk stays where it was
                loss = loss + args.value_coef * ((value - value0[idx]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    return float(np.mean(losses))


def run(args: ExpertArgs, before_writing: Callable[[], None] = lambda: None) -> dict:
    """Label (or load ``args.labels``), fit, save ``expert.pt``, ``labels.npz`` and
    ``summary.json`` in ``args.out`` (each replaced whole or not at all:
    ``barbu_env.util.files``), calling ``before_writing`` before the first of them; returns
    the summary."""
    out = Path(args.out)
    torch.set_num_threads(args.torch_threads)
    gen = torch.Generator().manual_seed(args.seed)
    path = str(checkpoint_path(args.student))
    model, _ = load_checkpoint(path)
    start = time.time()
    if args.labels:
        data = load_labels(args.labels)
        split(data, args.holdout)  # refused before anything is written
        out.mkdir(parents=True, exist_ok=True)
    else:
        check_games(args)
        out.mkdir(parents=True, exist_ok=True)
        data = label(path, args)
        before_writing()
        before_writing = _nothing
        with replacing(out / "labels.npz") as tmp, open(tmp, "wb") as f:
            np.savez_compressed(f, **data)
    label_seconds = time.time() - start
    data["target"] = soft_targets(data["probs"], data["values"], data["masks"], args.temperature)
    train, held = split(data, args.holdout)
    before = measure(model, held)
    t0 = time.time()
    loss = fit(model, train, args, gen)
    fit_seconds = time.time() - t0
    after = measure(model, held)
    summary = {
        "args": dataclasses.asdict(args),
        "labels": int(len(data["obs"])),
        "train": len(train["obs"]),
        "holdout": len(held["obs"]),
        "label_seconds": round(label_seconds, 1),
        "fit_seconds": round(fit_seconds, 1),
        "loss": round(loss, 4),
        "holdout_before": before,
        "holdout_after": after,
    }
    before_writing()
    save_checkpoint(out / "expert.pt", model, expert_config=dataclasses.asdict(args), expert_summary=summary)
    write_text(out / "summary.json", json.dumps(summary, indent=2))
    return summary


def _nothing() -> None:
    pass


def stage_expert_args(args) -> ExpertArgs:
    """The ``ExpertArgs`` of a training run (``barbu_training.config.Args``) whose ``expert``
    mapping is set: the mapping's fields, the student its ``init``, the searcher (unless
    the mapping names one) ``pimc-ppo`` with the student as its rollout policy and prior,
    the result in its run folder, and its ``seed``, ``num_workers``, ``rules`` and
    ``torch_threads``."""
    fields = dict(args.expert)
    fields.setdefault("searcher", f"pimc-ppo:rollout={args.init}")
    return ExpertArgs(
        **fields,
        student=args.init,
        out=str(Path(args.run_dir) / args.exp_name),
        seed=args.seed,
        workers=args.num_workers,
        rules=args.rules,
        torch_threads=args.torch_threads,
    )


def train_expert(args) -> dict:
    """Run the expert iteration of a training run's ``expert`` mapping (``stage_expert_args``)
    in its run folder: ``expert.pt``, the checkpoint the chain's next stage starts from,
    ``labels.npz`` and ``summary.json`` (an earlier run's removed before the first of its
    files is replaced, so that a run stopped part way is not taken for a finished one, and a
    run that fails before writing anything leaves it). Returns the summary, as
    ``summary.json`` has it: ``run``'s with the run folder (``run``), the checkpoint, the
    minutes, and ``expert`` true."""
    expert = stage_expert_args(args)
    start = time.time()
    done = Path(expert.out) / "summary.json"
    summary = run(expert, before_writing=lambda: done.unlink(missing_ok=True)) | {
        "expert": True,
        "run": expert.out,
        "checkpoint": str(Path(expert.out) / "expert.pt"),
        "minutes": (time.time() - start) / 60,
    }
    write_text(Path(expert.out) / "summary.json", json.dumps(summary, indent=2))
    return summary


def describe(summary: dict) -> str:
    """One line on an expert-iteration run: labels, time, held-out agreement and KL before and after."""
    done = f"{summary['labels']} labels ({summary['label_seconds']:.0f} s), fit {summary['fit_seconds']:.0f} s; "
    if not summary["holdout"]:
        return done + "no decision held out"
    b, a = summary["holdout_before"]["all"], summary["holdout_after"]["all"]
    return done + (
        f"held-out agreement with the search {b['agreement']:.3f} -> {a['agreement']:.3f}, "
        f"KL(target || network) {b['kl']:.4f} -> {a['kl']:.4f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m barbu_training.expert", description=__doc__.split("\n\n")[0])
    try:
        args = ExpertArgs(**vars(add_field_flags(parser, ExpertArgs).parse_args(argv)))
    except ValidationError as e:
        parser.error(str(config_error(e)))
    try:
        summary = run(args)
    except ConfigError as e:  # what the arguments ask that cannot be done: one line
        parser.exit(2, error_line(f"{parser.prog}: error: {e}") + "\n")
    print(f"{describe(summary)}; wrote {Path(args.out) / 'expert.pt'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
