"""Self-play PPO for Barbu, one shared masked policy for all four seats.

The algorithm, in the manner of CleanRL's ``ppo.py``; the pieces around it live in
``training/config.py`` (the ``Args`` dataclass, YAML configs, flags) and
``training/rollout.py`` (the opponent plan, whole games on the batched engine with
per-seat bookkeeping, GAE along each seat's own decisions). Read top to bottom: the two
updates (imitation, PPO), then the ``Trainer`` — its state, one iteration (rollout,
update, snapshot, logging, evaluation and checkpoint), the end of the run — then the
evaluation helpers and the command line.

Warm start (optional, ``bc_iterations``): the first iterations play whole games of a
teacher agent (``heuristic`` by default) in every seat, and train the policy to pick the
teacher's actions (masked cross-entropy) and the value head to predict the discounted
returns; PPO then improves on the teacher by self-play. With ``bc_iterations: 0`` the
policy learns from scratch.

Privileged critic (optional, ``central_critic``): the value network also reads the other
three hands (``ObservationEncoder.privileged``); the policy never does.

KL anchor (optional, ``kl_anchor`` and ``kl_coef``): the PPO loss adds ``kl_coef`` times the
mean KL(anchor || policy) of the masked distributions on each minibatch's observations,
the anchor a frozen network (a checkpoint or a shipped policy) on the run's device, under
no_grad; logged as ``losses/kl_anchor``. With ``kl_coef`` 0 the update is the one without
(the anchor is not even loaded into the trainer).

A chain of runs (``stages``, ``train_stages``): one config, the stages run in order, each
from the previous one's checkpoint (``barbu_training.stages.stage_args``), all checked before the
first starts; ``--resume auto`` skips the stages that finished and resumes the first that
did not. A run (a stage) with an ``expert`` mapping is expert iteration instead of PPO
(``run_one``, ``barbu_training.expert.train_expert``). ``configs/train/ppo-finetuned.yaml`` is the
chain that made ``ppo-finetuned``, ``configs/train/ppo-expert.yaml`` the one that made
``ppo-expert``.

Fine-tuning (optional, ``init``): a new run starts from the weights of a checkpoint or a
shipped policy (``--init ppo``), with a fresh optimizer, counters and pool; a run with a
privileged critic may start from a network without one (its critic starts as that
network's value head: ``barbu_models.policy.with_privileged_critic``).

Logged to TensorBoard: ``charts/`` (decisions per second, learning rate, the learning
seats' scores by game kind), ``losses/`` and ``eval/`` (the periodic and final duplicate
evaluations). Checkpoints (``latest.pt``, ``best.pt``) hold the weights, the optimizer,
the counters, the snapshot pool, the learning curve, the update's generator and the run's
config: ``--resume`` carries on exactly as the run would have (each rollout is seeded by
the run's seed and the iteration). ``latest.pt`` is written every ``checkpoint_minutes``
and at every periodic evaluation; Ctrl-C saves the last whole iteration to it and exits
with one line (``TrainingInterrupted``); a killed run loses the work since the last one.

Rollout workers (optional, ``workers``, ``barbu_training.workers``): the rollouts play on Ray
actors, each its share of the games, while this process keeps the network and the
update; one worker plays exactly the in-process rollouts. With ``overlap`` the next
rollout plays during the update, with the weights and pool from before it (kept in
checkpoints). A worker that dies ends the run with ``WorkerLost``, the last whole
iteration saved to ``latest.pt``.

Device (``device``, ``barbu_models.device``): the model, the optimizer's state, the update's
minibatches (copied from the CPU one at a time) and the rollouts' inference (the pool
snapshots' too) live on it; checkpoints are saved on the CPU and a resumed run loads
them onto its device. Progress (``progress``): a bar counting decisions, or under a time
budget the percent of the run by whichever limit ends it first, then a bar per final
evaluation.

Run: ``barbu train --config configs/train/quick.yaml`` (any field can be overridden:
``--seed 3 --total-decisions 2000000``), or ``python -m barbu_training.ppo ...``. A fresh run
replaces the config, the logs, the summary, the learning curve and the checkpoints of an
earlier run of the same name (``best.pt`` at its first evaluation); a config that fails
a check (``barbu_training.config``: every field's range, then ``preflight.prepare``, which also checks a
checkpoint to resume whole) is a ``ConfigError`` before anything on disk is touched. An
earlier run's folder is left as it was until the new run has started (its device, its
rollout workers, then its config and TensorBoard writer, whose failure puts the old files
back: ``starting_in``); a run that cannot start says why in one line. Every file the
trainer writes but the TensorBoard log replaces the old one whole or not at all
(``barbu_env.util.files``).

Divergence: after each update the losses and the weights must be finite (and the
rollout's returns before it), and the update must not fail on a number torch cannot hold;
if not, the run stops with ``TrainingDiverged``, its last whole iteration saved to
``latest.pt`` (``best.pt`` left as it is): no checkpoint of NaNs.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from barbu_env.util.extras import needs

with needs("train", "barbu_training.ppo"):  # one line if the extra is missing
    import torch

from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.agents.registry import split_agent_specs
from barbu_env.util.files import OutputError, quote, replacing, write_text
from barbu_models.policy import (
    BarbuActorCritic,
    MaskedCategorical,
    load_checkpoint,
    save_checkpoint,
    with_privileged_critic,
)
from barbu_training.config import Args, ConfigError, build_parser, load_args, model_config
from barbu_training.precision import autocast
from barbu_training.preflight import Prepared, prepare
from barbu_training.rollout import GAME_KINDS, Collector, Rollout, rollout_generators
from barbu_training.stages import resume_path, stage_args
from barbu_training.workers import WorkerGroup, WorkerLost

__all__ = [
    "Args",
    "ConfigError",
    "StartFailed",
    "Trainer",
    "TrainingDiverged",
    "TrainingInterrupted",
    "build_parser",
    "load_args",
    "main",
    "model_config",
    "stage_args",
    "train",
    "plan_stages",
    "train_stages",
]

#: Losses of an update that must be finite (the explained variance may be NaN: returns of no variance).
FINITE_STATS = (
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
    "losses/approx_kl",
    "losses/bc_loss",
    "losses/bc_value_loss",
    "losses/kl_anchor",
)


# ---------------------------------------------------------------------- the updates


def as_tensors(rollout: Rollout, central_critic: bool) -> dict[str, torch.Tensor]:
    """The rollout's training arrays as tensors sharing their memory."""
    fields = ["obs", "masks", "actions", "logprobs", "values", "advantages", "returns"]
    out = {k: torch.from_numpy(getattr(rollout, k)) for k in fields}
    out["states"] = torch.from_numpy(rollout.states) if central_critic else None
    return out


def minibatch(b: dict, mb: torch.Tensor, device: torch.device) -> dict[str, torch.Tensor]:
    """Rows ``mb`` of the rollout's tensors, gathered on the CPU and copied to ``device``
    (the model's: a whole rollout, gigabytes of observations, may not fit on a GPU; a
    minibatch does); no ``states`` without a privileged critic."""
    return {k: v[mb].to(device) for k, v in b.items() if v is not None}


def imitation_update(
    model: BarbuActorCritic,
    optimizer: torch.optim.Optimizer,
    b: dict,
    args: Args,
    gen: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> dict[str, float]:
    """Warm start: train the policy to pick the teacher's actions (masked cross-entropy)
    and the value head to predict the returns, ``bc_epochs`` passes of
    ``bc_minibatch_size`` (shuffled with ``gen``), the forward passes' matrix products in
    ``dtype`` (``barbu_training.precision``), each minibatch copied to the model's device.
    Returns the last minibatch's losses and accuracy."""
    n = len(b["obs"])
    device = next(model.parameters()).device
    for _epoch in range(args.bc_epochs):
        perm = torch.randperm(n, generator=gen)
        for lo in range(0, n, args.bc_minibatch_size):
            m = minibatch(b, perm[lo : lo + args.bc_minibatch_size], device)
            with autocast(dtype, device):
                logits, newvalue = model(m["obs"], m.get("states"))
            logits, newvalue = logits.float(), newvalue.float()
            dist = MaskedCategorical(logits, m["masks"])
            bc_loss = -dist.log_prob(m["actions"]).mean()
            v_loss = 0.5 * ((newvalue - m["returns"]) ** 2).mean()
            loss = bc_loss + args.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
    with torch.no_grad():
        accuracy = (dist.mode() == m["actions"]).float().mean().item()
    return {"losses/bc_loss": bc_loss.item(), "losses/bc_value_loss": v_loss.item(), "charts/bc_accuracy": accuracy}


def anchor_kl(anchor: MaskedCategorical, policy: MaskedCategorical) -> torch.Tensor:
    """KL(anchor || policy) of each row, over its legal actions (both masked alike): 0
    where the two distributions are equal, positive elsewhere."""
    terms = anchor.probs * (anchor.log_probs_all - policy.log_probs_all)
    return torch.where(anchor.mask, terms, torch.zeros_like(terms)).sum(-1)


def ppo_update(
    model: BarbuActorCritic,
    optimizer: torch.optim.Optimizer,
    b: dict,
    args: Args,
    gen: torch.Generator,
    dtype: torch.dtype = torch.float32,
    anchor: BarbuActorCritic | None = None,
) -> dict[str, float]:
    """``update_epochs`` passes of clipped PPO over the rollout (CleanRL's update, with the
    masks reapplied; minibatches shuffled with ``gen``; the forward passes' matrix products
    in ``dtype``, ``barbu_training.precision``). Returns the last minibatch's
    losses, the clip fraction, the explained variance, and ``losses/first_ratio_error``:
    the largest ``|ratio - 1|`` of the first minibatch (0 up to rounding: the stored
    log-probabilities are the model's own before the update). The rollout ``b`` stays on
    the CPU; each minibatch is copied to the model's device (``minibatch``). With an
    ``anchor`` (a frozen network on the model's device) and ``args.kl_coef`` above 0 the
    loss adds ``kl_coef`` times the mean ``anchor_kl`` of the minibatch, the anchor's
    forward pass under no_grad (``losses/kl_anchor``: the last minibatch's)."""
    n = len(b["obs"])
    device = next(model.parameters()).device
    clipfracs, approx_kl, first_ratio_error = [], torch.tensor(0.0), None
    pull = anchor is not None and args.kl_coef > 0
    for _epoch in range(args.update_epochs):
        perm = torch.randperm(n, generator=gen)
        for lo in range(0, n, args.minibatch_size):
            m = minibatch(b, perm[lo : lo + args.minibatch_size], device)
            with autocast(dtype, device):
                logits, newvalue = model(m["obs"], m.get("states"))
            logits, newvalue = logits.float(), newvalue.float()
            dist = MaskedCategorical(logits, m["masks"])
            newlogprob = dist.log_prob(m["actions"])
            entropy = dist.entropy()
            logratio = newlogprob - m["logprobs"]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()  # http://joschu.net/blog/kl-approx.html
                if first_ratio_error is None:
                    first_ratio_error = (ratio - 1).abs().max().item()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
            mb_adv = m["advantages"]
            if args.norm_adv and len(mb_adv) > 1:  # a last minibatch of one row has no spread (std NaN)
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
            returns, values = m["returns"], m["values"]
            if args.clip_vloss:
                v_clipped = values + (newvalue - values).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((newvalue - returns) ** 2, (v_clipped - returns) ** 2).mean()
            else:
                v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
            entropy_loss = entropy.mean()
            loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
            if pull:
                with torch.no_grad(), autocast(dtype, device):
                    anchor_logits = anchor.policy_head(anchor.features(m["obs"]))
                kl_anchor = anchor_kl(MaskedCategorical(anchor_logits.float(), m["masks"]), dist).mean()
                loss = loss + args.kl_coef * kl_anchor
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
        if args.target_kl and approx_kl > args.target_kl:
            break
    var_y = b["returns"].var()
    explained_var = float("nan") if var_y == 0 else float(1 - (b["returns"] - b["values"]).var() / var_y)
    return {
        "losses/value_loss": v_loss.item(),
        "losses/policy_loss": pg_loss.item(),
        "losses/entropy": entropy_loss.item(),
        "losses/approx_kl": approx_kl.item(),
        "losses/clipfrac": float(np.mean(clipfracs)),
        "losses/explained_variance": explained_var,
        "losses/first_ratio_error": first_ratio_error,
    } | ({"losses/kl_anchor": kl_anchor.item()} if pull else {})


# ---------------------------------------------------------------------- starting a run

#: What a fresh run replaces in its folder when it starts: an earlier run's config, log,
#: summary (a chain's mark of a finished stage) and learning curve. Its checkpoints stay
#: until the new run writes its own.
FRESH_REPLACES = ("config.yaml", "tb", "summary.json", "learning_curve.png")
#: What a resumed run replaces: its config (its log gets a new file beside the old ones).
RESUMED_REPLACES = ("config.yaml",)


class StartFailed(RuntimeError):
    """The run could not start (its rollout workers); nothing in its folder was touched."""


def start_workers(args: Args, rules: Any) -> WorkerGroup:
    """The run's rollout workers (``barbu_training.workers.WorkerGroup``); Ray failing to start
    them is a ``StartFailed`` of one line (a ``WorkerLost`` says so itself)."""
    try:
        return WorkerGroup(args, rules)
    except (WorkerLost, ConfigError):
        raise
    except Exception as e:  # Ray's many errors: a cluster not there, a local Ray that cannot start
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise StartFailed(f"the rollout workers did not start: {reason}") from e


@contextlib.contextmanager
def starting_in(run_path: Path, replaces: tuple[str, ...]) -> Iterator[None]:
    """The body writes a new run's start into ``run_path`` (created if missing): first the
    entries ``replaces`` of an earlier run there are moved aside (renamed, in the folder). If
    the body fails, everything new under ``run_path`` is removed and the old entries are
    put back, so that the folder is as it was (an ``OSError`` becomes an ``OutputError`` of
    one line); if it succeeds, the old entries are deleted."""
    made = [p for p in (run_path, *run_path.parents) if not os.path.lexists(p)]  # deepest first
    before = {run_path, *run_path.rglob("*")} if run_path.is_dir() else set()
    try:
        run_path.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".replaced-", dir=run_path))
    except OSError as e:
        _remove_new(before, run_path, made)
        raise OutputError(f"could not start the run in {run_path}: {e.strerror or e}") from None
    moved: list[str] = []
    try:
        for name in replaces:
            if os.path.lexists(run_path / name):
                os.replace(run_path / name, aside / name)
                moved.append(name)
        yield
    except BaseException as e:
        for name in replaces:  # the new run's (an old entry not yet moved aside stays)
            if name in moved or run_path / name not in before:
                _remove(run_path / name)
        for name in moved:
            os.replace(aside / name, run_path / name)
        _remove(aside)
        _remove_new(before, run_path, made)
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(
                f"could not start the run in {run_path}: {e.strerror or quote(str(e), 120)} (the folder is as it was)"
            ) from None
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _remove_new(before: set[Path], run_path: Path, made: list[Path]) -> None:
    """Remove what is under ``run_path`` and not in ``before`` (the deepest first), then the
    folders of ``made`` (the deepest first), if empty."""
    new = [p for p in run_path.rglob("*") if p not in before] if run_path.is_dir() else []
    for path in sorted(new, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            _remove(path)
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()


# ---------------------------------------------------------------------- the trainer


class Trainer:
    """One training run: ``Trainer(args).run()`` (what ``train`` does). Everything is
    written under ``run_dir/exp_name``."""

    def __init__(self, args: Args, ready: Prepared | None = None):
        from torch.utils.tensorboard import SummaryWriter

        if args.stages:
            raise ConfigError("a config of stages is a chain of runs: train() runs it, not one Trainer")
        self.args = args
        # Every check first (the fields were checked by Args; rules, device, precision, agents,
        # checkpoint, memory by prepare, unless the caller did: ``ready``): a bad config is a
        # ConfigError before the run folder is touched.
        ready = prepare(args) if ready is None else ready
        rules, self.device, self.dtype = ready.rules, ready.device, ready.dtype  # dtype: the products'
        torch.manual_seed(args.seed)  # the initial weights (drawn on the CPU: the same on every device)
        torch.set_num_threads(args.torch_threads)
        # --- the model, the optimizer and the counters (restored on resume, onto the device) ---
        self.model = BarbuActorCritic(model_config(args)).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.learning_rate, eps=1e-5)
        self.update_gen = torch.Generator().manual_seed(args.seed)  # the updates' minibatch shuffles
        self.iteration = self.decisions = self.next_snapshot_id = 0
        self.pool: dict[int, dict] = {}  # snapshot id -> state dict, on the CPU (their networks: on the device)
        self.history: list[dict] = []  # the periodic evaluations: the learning curve
        self.best: dict[str, Any] = {"score": -float("inf"), "path": None}
        self.lagged: tuple[dict, dict] | None = None  # with overlap: the next rollout's weights and pool
        self.start, self.minutes_before = time.time(), 0.0
        # the KL anchor: frozen, on the device; none without a KL term (the update is then the plain one)
        self.anchor = None
        if ready.anchor is not None and args.kl_coef > 0:
            self.anchor = ready.anchor.to(self.device).requires_grad_(False).eval()
        if args.resume:
            self._resume(resume_path(args), ready.start)
        elif args.init:
            self._init_from(args.init, ready.start)
        self.model.eval()
        self.run_path = Path(args.run_dir) / args.exp_name
        self.ckpt_dir = self.run_path / "checkpoints"
        self.timing = {  # this process's work
            "decisions": 0,
            "transitions": 0,
            "update_epochs": args.update_epochs,
            "collect_seconds": 0.0,
            "update_seconds": 0.0,
        }
        self.boundary = self.state()  # the state after the last whole iteration (what Ctrl-C saves)
        self.bar = None  # run()'s progress bar (tqdm), kept after it closes
        self.summary_workers: dict[str, Any] = {"count": 0}  # the rollout workers, as the summary tells them
        # --- the rollouts (in this process, or on Ray workers: barbu_training.workers), then the run
        # folder, its config and its TensorBoard log: an earlier run's folder is left as it was
        # until all of them have started (put back if the folder's part fails), and workers
        # that started are ended if anything after them fails ---
        self.collector = self.workers = self.pending = self.writer = None
        try:
            if args.workers:
                self.workers = start_workers(args, rules)
            else:
                self.collector = Collector(args, rules, dtype=self.dtype)
            with starting_in(self.run_path, RESUMED_REPLACES if args.resume else FRESH_REPLACES):
                self._open_run_folder(SummaryWriter)
        except BaseException:
            self.close_workers()
            raise
        self.start = self.last_checkpoint = time.time()  # this session's

    def _open_run_folder(self, summary_writer: type) -> None:
        """The run's config, checkpoint folder and TensorBoard writer (``summary_writer``),
        inside ``starting_in``: a failure closes the writer before the folder is put back."""
        args = self.args
        try:
            self.ckpt_dir.mkdir(exist_ok=True)
            write_text(self.run_path / "config.yaml", yaml.safe_dump(dataclasses.asdict(args), sort_keys=False))
            self.writer = summary_writer(str(self.run_path / "tb"))
            self.writer.add_text(
                "hyperparameters",
                "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()),
            )
            self.writer.flush()  # the log is written, or this fails here
        except BaseException:
            if self.writer is not None:
                with contextlib.suppress(Exception):
                    self.writer.close()
                self.writer = None
            raise

    def _init_from(self, spec: str, loaded: tuple[BarbuActorCritic, dict] | None = None) -> None:
        """Start from the weights of a checkpoint or a shipped policy (``init``; ``loaded``:
        it, loaded already); a network of another shape is a ValueError, except that a run
        with ``central_critic`` may start from a network without one
        (``barbu_models.policy.with_privileged_critic``: its critic starts as the checkpoint's
        value head)."""
        start, _ = loaded or load_checkpoint(checkpoint_path(spec))
        wanted = self.model.config
        if (
            wanted.state_dim
            and not start.config.state_dim
            and dataclasses.replace(start.config, state_dim=wanted.state_dim) == wanted
        ):
            start = with_privileged_critic(start, wanted.state_dim)
        self._load_weights(spec, start)

    def _load_weights(self, source: str, model: BarbuActorCritic) -> None:
        """This run's network takes ``model``'s weights; a network of another shape is a
        ValueError (``resume`` and ``init`` alike)."""
        if model.config != self.model.config:
            raise ValueError(
                f"{source}: the checkpoint's network ({model.config}) is not the one this config builds "
                f"({self.model.config}): set hidden/layers/card_embed/central_critic to the checkpoint's"
            )
        self.model.load_state_dict(model.state_dict())

    def _resume(self, path: str, loaded: tuple[BarbuActorCritic, dict] | None = None) -> None:
        """Restore everything ``state`` holds from a checkpoint (``loaded``: it, loaded
        already); a checkpoint of another network shape is a ValueError."""
        resumed, payload = loaded or load_checkpoint(path)
        self._load_weights(path, resumed)
        self.optimizer.load_state_dict(payload["optimizer"])
        self.iteration, self.decisions = int(payload["iteration"]), int(payload["decisions"])
        self.pool = {int(k): v for k, v in payload.get("pool", {}).items()}
        self.next_snapshot_id = int(payload.get("next_snapshot_id", max(self.pool, default=-1) + 1))
        self.history = json.loads(payload.get("history", "[]"))
        self.best = json.loads(payload.get("best", json.dumps(self.best)))
        if "update_generator" in payload:  # older checkpoints: a fresh shuffle generator
            self.update_gen.set_state(payload["update_generator"])
        self.minutes_before = float(payload.get("minutes", 0.0))
        if self.args.overlap and "rollout_weights" in payload:
            pool = {int(k): v for k, v in payload["rollout_pool"].items()}
            self.lagged = (payload["rollout_weights"], pool)

    def state(self) -> dict[str, Any]:
        """A copy of everything a resumed run needs to carry on exactly as this one would:
        the weights, the optimizer, the counters, the pool, the learning curve, the best
        evaluation and the update's generator (the rollouts are seeded by the iteration)."""
        return {
            "state_dict": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "iteration": self.iteration,
            "decisions": self.decisions,
            "pool": {str(k): v for k, v in self.pool.items()},  # snapshots are never modified
            "next_snapshot_id": self.next_snapshot_id,
            "history": json.dumps(self.history),
            "best": json.dumps(self.best),
            "update_generator": self.update_gen.get_state(),
            "minutes": self.minutes(),
        } | self._lagged_state()

    def _lagged_state(self) -> dict[str, Any]:
        """With overlap, the weights and pool of the rollout under way (a checkpoint
        stores a snapshot shared with ``pool`` once: ``torch.save`` keeps shared tensors
        once)."""
        if self.lagged is None:
            return {}
        weights, pool = self.lagged
        return {"rollout_weights": weights, "rollout_pool": {str(k): v for k, v in pool.items()}}

    def minutes(self) -> float:
        """Minutes of training so far, earlier sessions of a resumed run included."""
        return self.minutes_before + (time.time() - self.start) / 60

    def checkpoint(self, path: Path, state: dict[str, Any] | None = None) -> Path:
        """Save ``state`` (default: the current one) with the run's config, every tensor on
        the CPU whatever the training device (it loads anywhere); saving is atomic
        (``save_checkpoint``), so a run killed while saving keeps the previous one."""
        state = dict(state or self.state())
        model = BarbuActorCritic(self.model.config)
        model.load_state_dict(state.pop("state_dict"))
        save_checkpoint(path, model, args=dataclasses.asdict(self.args), **state)
        self.last_checkpoint = time.time()
        return path

    def progress(self) -> float:
        """Share of the run done: by decisions, or by time when there is a time budget."""
        done = self.decisions / self.args.total_decisions
        if self.args.time_budget_minutes:  # a resumed run's budget includes its earlier sessions
            done = max(done, self.minutes() / self.args.time_budget_minutes)
        return min(done, 1.0)

    def bar_position(self) -> tuple[float, float]:
        """Where the progress bar stands, ``(done, total)`` in its units: decisions out of
        ``total_decisions``; with a time budget, percent of the run (``progress``: whichever
        limit ends the run first), so that its rate and time left are the run's. A resumed
        run starts where it stood."""
        if self.args.time_budget_minutes:
            return 100.0 * self.progress(), 100.0
        return self.decisions, self.args.total_decisions

    def imitating(self, iteration: int | None = None) -> bool:
        """Whether ``iteration`` (default: the current one) belongs to the warm start."""
        return (self.iteration if iteration is None else iteration) <= self.args.bc_iterations

    def set_learning_rate(self) -> None:
        """The warm start's constant rate, else PPO's (annealed over the run if ``anneal_lr``)."""
        args, group = self.args, self.optimizer.param_groups[0]
        if self.imitating() and args.bc_learning_rate > 0:
            group["lr"] = args.bc_learning_rate
        elif args.anneal_lr:
            group["lr"] = (1.0 - self.progress()) * args.learning_rate
        else:
            group["lr"] = args.learning_rate

    def collect(self) -> Rollout:
        """This iteration's rollout (the teacher's games during the warm start), seeded by
        the run's seed and the iteration (so that a resumed run plays what it would have):
        in this process, or on the rollout workers (``barbu_training.workers``). With
        ``overlap``, the workers then start the next iteration's rollout with the weights
        and pool of this one (``lagged``, kept in checkpoints: a resumed run plays it alike)."""
        if self.workers is None:
            rng, gen = rollout_generators(self.args.seed, self.iteration)
            return self.collector.collect(self.model, self.pool, rng, gen, self.teacher(self.iteration))
        pending = self.pending
        if pending is None or pending.iteration != self.iteration:
            weights, pool = self.lagged if self.lagged is not None else (self.weights(), self.pool)
            pending = self.workers.launch(weights, pool, self.iteration, self.teacher(self.iteration))
        self.pending = None
        rollout = self.workers.gather(pending)
        if self.args.overlap:  # the next rollout plays with these weights and pool while they update
            self.lagged = (self.weights(), dict(self.pool))
            nxt = self.iteration + 1
            self.pending = self.workers.launch(*self.lagged, nxt, self.teacher(nxt))
        return rollout

    def teacher(self, iteration: int) -> str:
        """The agent whose games iteration ``iteration`` imitates (the warm start's), or empty."""
        return self.args.bc_teacher if self.imitating(iteration) else ""

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the network's weights, for the rollout workers."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def iterate(self) -> float:
        """One iteration: rollout, update, snapshot, logging. Returns its decisions per second."""
        args = self.args
        self.iteration += 1
        self.set_learning_rate()
        # --- rollout ---
        t0 = time.time()
        rollout = self.collect()
        collect_time = time.time() - t0
        self.decisions += rollout.decisions
        # --- update: imitation during the warm start, PPO after ---
        t1 = time.time()
        self.model.train()
        batch = as_tensors(rollout, args.central_critic)
        if not (torch.isfinite(batch["returns"]).all() and torch.isfinite(batch["advantages"]).all()):
            self._diverged("the rollout's returns (rewards past float32's range: reward_scale times the scores)")
        update = imitation_update if self.imitating() else ppo_update
        anchor = (self.anchor,) if self.anchor is not None and not self.imitating() else ()
        try:
            stats = update(self.model, self.optimizer, batch, args, self.update_gen, self.dtype, *anchor)
        except torch.OutOfMemoryError:
            raise
        except (RuntimeError, OverflowError, FloatingPointError) as e:  # a number torch cannot hold
            self._diverged("the update", f"failed: {quote(' '.join(str(e).split()), 120)}")
        self.model.eval()
        losses = [k for k in FINITE_STATS if k in stats and not np.isfinite(stats[k])]
        if losses or not torch.stack([torch.isfinite(p).all() for p in self.model.parameters()]).all():
            self._diverged(f"the update's {', '.join(k.split('/')[1] for k in losses) or 'weights'}")
        update_time = time.time() - t1
        # --- opponents pool: a snapshot every snapshot_every iterations, the oldest dropped ---
        if args.snapshot_every and self.iteration % args.snapshot_every == 0:
            self.pool[self.next_snapshot_id] = {k: v.to("cpu", copy=True) for k, v in self.model.state_dict().items()}
            self.next_snapshot_id += 1
            while len(self.pool) > args.pool_size:
                del self.pool[min(self.pool)]
        # --- logging ---
        sps = rollout.decisions / (collect_time + update_time)
        self.timing["decisions"] += rollout.decisions
        self.timing["transitions"] += len(rollout.actions)
        self.timing["collect_seconds"] += collect_time
        self.timing["update_seconds"] += update_time
        scalars = {
            "charts/SPS": sps,
            "charts/collect_SPS": rollout.decisions / collect_time,
            "charts/learning_rate": self.optimizer.param_groups[0]["lr"],
            "charts/learner_score": float(np.mean(rollout.learner_scores)),
        }
        kind_scores = rollout.kind_scores
        scalars |= {
            f"charts/learner_score_{kind}": float(np.mean(kind_scores[kind]))
            for kind in GAME_KINDS
            if kind in kind_scores
        }
        for tag, value in (scalars | stats).items():
            self.writer.add_scalar(tag, value, self.decisions)
        return sps

    def _diverged(self, what: str, how: str = "not finite") -> None:
        """Stop the run: ``what`` is no longer finite (or ``how`` it went wrong: an update
        that raised). ``latest.pt`` gets the last whole iteration (``boundary``, whose
        weights were checked finite), ``best.pt`` is left as it is; raises
        ``TrainingDiverged``."""
        path = self.checkpoint(self.ckpt_dir / "latest.pt", self.boundary)
        self.writer.close()
        raise TrainingDiverged(what, self.iteration, path, int(self.boundary["iteration"]), how)

    def evaluate(self, games: int, progress: bool = False) -> dict[str, Any]:
        """A periodic duplicate evaluation of the latest weights: a point on the learning
        curve, ``best.pt`` if it beats the best so far against the first eval opponent
        (``progress``: its own bars, for when the training bar is closed)."""
        path = self.checkpoint(self.ckpt_dir / "latest.pt")
        found = evaluate_checkpoint(path, self.args, games, progress=progress)
        self.history.append(
            {
                "iteration": self.iteration,
                "decisions": self.decisions,
                "imitating": self.imitating(),
                "eval": {k: {"mean": v["mean"], "ci": v["ci"]} for k, v in found.items()},
            }
        )
        for opp, v in found.items():
            self.writer.add_scalar(f"eval/score_vs_{opp}", v["mean"], self.decisions)
            self.writer.add_scalar(f"eval/ci_low_vs_{opp}", v["ci"][0], self.decisions)
        key = split_agent_specs(self.args.eval_opponents)[0]
        if found[key]["mean"] > self.best["score"]:
            self.best.update(score=found[key]["mean"], path=str(self.ckpt_dir / "best.pt"), iteration=self.iteration)
            with replacing(self.ckpt_dir / "best.pt") as tmp:
                shutil.copyfile(path, tmp)
        return found

    def run(self) -> dict[str, Any]:
        """Train until ``total_decisions`` or the time budget, then evaluate the best
        checkpoint; returns the summary (also written to ``summary.json``). With
        ``progress``, a bar on stderr (``bar_position``; kept as ``self.bar``) and one per
        opponent for the final evaluation."""
        from tqdm import tqdm

        args = self.args
        done, total = self.bar_position()
        budget = bool(args.time_budget_minutes)
        self.bar = bar = tqdm(
            total=total,
            initial=done,
            unit="%" if budget else "dec",
            bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}" if budget else None,
            disable=not args.progress,
            dynamic_ncols=True,
        )
        last_eval = ""
        try:
            while self.decisions < args.total_decisions and self.progress() < 1.0:
                sps = self.iterate()
                # --- evaluation and checkpoints ---
                if args.eval_every and self.iteration % args.eval_every == 0:
                    found = self.evaluate(args.eval_games)
                    last_eval = " ".join(f"{k}:{v['mean']:+.0f}" for k, v in found.items())
                elif time.time() - self.last_checkpoint >= args.checkpoint_minutes * 60:
                    self.checkpoint(self.ckpt_dir / "latest.pt")
                self.boundary = self.state()
                bar.update(self.bar_position()[0] - bar.n)
                phase = "imitating" if self.imitating() else "PPO"
                spent = ""
                if budget:  # what the percent is made of
                    spent = f"{self.decisions:,} dec {self.minutes():.3g}/{args.time_budget_minutes:g} min "
                bar.set_postfix_str(f"{spent}it {self.iteration} {phase} SPS {sps:,.0f} eval {last_eval or '-'}")
        except KeyboardInterrupt:
            # the iteration under way is dropped: its update may be half done
            path = self.checkpoint(self.ckpt_dir / "latest.pt", self.boundary)
            self.writer.close()
            raise TrainingInterrupted(path, int(self.boundary["iteration"])) from None
        except WorkerLost as e:  # its games are gone: the last whole iteration is kept
            path = self.checkpoint(self.ckpt_dir / "latest.pt", self.boundary)
            self.writer.close()
            raise WorkerLost(
                f"{e}; the run stopped, iteration {int(self.boundary['iteration'])} kept in {path} "
                f"(resume with --resume {path})"
            ) from None
        finally:
            bar.close()
            self.close_workers()
        return self.finish()

    def close_workers(self) -> None:
        """End the rollout workers (a rollout still under way is dropped)."""
        if self.workers is not None:
            self.summary_workers = self.workers.describe()
            self.workers.close()
            self.workers = self.pending = None

    def finish(self) -> dict[str, Any]:
        """The end of the run: a last point on the learning curve, the final evaluation of
        the best checkpoint on held-out deals, the curve's plot and the summary."""
        args = self.args
        if args.eval_every:  # after the training bar: this one may show its own
            self.evaluate(args.eval_games, progress=args.progress)
        final_path = Path(self.best["path"]) if self.best["path"] else self.checkpoint(self.ckpt_dir / "latest.pt")
        # The best checkpoint was picked on the periodic evaluations' deals: the final
        # evaluation plays fresh ones, so its figure carries no selection bias.
        final = {}
        if args.final_eval_games:
            final = evaluate_checkpoint(
                final_path, args, args.final_eval_games, seed=args.final_eval_seed, progress=args.progress
            )
        for opp, v in final.items():
            self.writer.add_scalar(f"eval/final_score_vs_{opp}", v["mean"], self.decisions)
        if self.history:
            plot_learning_curve(self.history, self.run_path / "learning_curve.png")
        self.writer.close()
        summary = {
            "run": str(self.run_path),
            "best_checkpoint": str(final_path),
            "decisions": self.decisions,
            "iterations": self.iteration,
            "minutes": (time.time() - self.start) / 60,
            "timing": self.timing,
            "workers": self.summary_workers,
            "final": {k: {"mean": v["mean"], "ci": v["ci"]} for k, v in final.items()},
            "history": self.history,
        }
        write_text(self.run_path / "summary.json", json.dumps(summary, indent=1))
        summary["final_results"] = {k: v["result"] for k, v in final.items()}
        return summary


class TrainingInterrupted(Exception):
    """Ctrl-C stopped the run; ``path`` holds a checkpoint of its last whole iteration
    (``stage``: which stage of a chain, in words; a chain resumes with ``--resume auto``)."""

    def __init__(self, path: Path, iteration: int, stage: str = ""):
        how = f"--resume {path}" if not stage else "the same config and --resume auto"
        where = f" {stage}:" if stage else ""
        super().__init__(f"interrupted{where} iteration {iteration} saved in {path} (resume with {how})")
        self.path, self.iteration, self.stage = path, iteration, stage


class TrainingDiverged(RuntimeError):
    """The loss or the weights stopped being finite, or the update failed on a number
    torch cannot hold (a learning rate or a reward scale too large for the network's
    float32); ``path`` holds the last whole iteration before it."""

    def __init__(self, what: str, iteration: int, path: Path, kept: int, how: str = "not finite"):
        super().__init__(
            f"training diverged in iteration {iteration} ({what} {how}): the run stopped, "
            f"iteration {kept} kept in {path} (best.pt untouched); lower learning_rate or reward_scale"
        )
        self.path, self.iteration, self.kept = path, iteration, kept


def train(args: Args) -> dict[str, Any]:
    """Run PPO; returns a summary (paths, timing, final evaluation). Writes everything
    under ``run_dir/exp_name``; a config of ``stages`` is a chain of runs (``train_stages``)."""
    if args.stages:
        return train_stages(args)
    return run_one(args)


def run_one(args: Args, ready: Prepared | None = None) -> dict[str, Any]:
    """One run: PPO (``Trainer``), or expert iteration for a run with an ``expert`` mapping
    (``barbu_training.expert.train_expert``); checked by ``prepare`` unless ``ready`` is its result."""
    if args.expert:
        from barbu_training.expert import train_expert

        if ready is None:
            prepare(args)
        return train_expert(args)
    return Trainer(args, ready).run()


def finished(args: Args) -> bool:
    """Whether the run of ``args`` has finished: its ``summary.json``, which a run writes
    after its last iteration and final evaluation (a fresh run removes an earlier one's
    before its first iteration)."""
    return (Path(args.run_dir) / args.exp_name / "summary.json").is_file()


def plan_stages(args: Args, ready: dict[int, Prepared] | None = None) -> tuple[list[Args], int]:
    """The chain of ``args.stages`` as it will run: every stage's Args
    (``barbu_training.stages.stage_args``; the first to run with its ``resume``) and the index of
    the first to run, all checked, nothing on disk touched. Without ``resume`` every stage
    runs. With ``resume`` (``auto``, or a checkpoint in its folder) the stages that
    finished (``finished``) are skipped and the first that did not resumes (``auto``: from
    its ``latest.pt``, or from its start if it has none); the stages after it run fresh.
    Every stage to run is checked by ``prepare`` (one that starts from the previous stage's
    checkpoint, not written yet, without it: ``stage_args`` checked its network's shape); a
    ConfigError naming the stage otherwise. ``ready`` gets what ``prepare`` found for each stage
    it checked whole (by index), so that the run does not check it again."""
    stages = stage_args(args)
    n = len(stages)
    first = 0
    if args.resume:
        first = next((k for k, s in enumerate(stages) if not finished(s)), n)
        if first < n:
            folder = Path(stages[first].run_dir) / stages[first].exp_name / "checkpoints"
            if args.resume == "auto":
                resume = str(folder / "latest.pt") if (folder / "latest.pt").is_file() else ""
            elif Path(args.resume).resolve().parent == folder.resolve():
                resume = args.resume
            else:
                raise ConfigError(
                    f"resume: {args.resume} is not a checkpoint of the first unfinished stage, stage {first + 1} "
                    f"of {n} ({stages[first].exp_name}): resume with auto, or a checkpoint in {folder}"
                )
            stages[first] = dataclasses.replace(stages[first], resume=resume)
    for k in range(first, n):
        unwritten = k > first and "init" not in args.stages[k]  # the previous stage's checkpoint, to come
        try:
            found = prepare(stages[k], written=not unwritten)
        except ConfigError as e:
            raise ConfigError(f"stages: stage {k + 1} of {n} ({stages[k].exp_name}): {e}") from None
        if ready is not None and not unwritten:
            ready[k] = found
    return stages, first


def train_stages(args: Args) -> dict[str, Any]:
    """Run the chain of ``args.stages`` in order, as ``plan_stages`` plans it (all checked
    before the first stage starts). Returns the last stage's summary with ``stages``: each
    stage's summary, its number as ``stage`` (a stage skipped by ``resume``: read from its
    ``summary.json``, ``skipped`` true, no ``final_results``). Ctrl-C is a
    ``TrainingInterrupted`` naming the stage (the chain resumes with ``--resume auto``)."""
    ready: dict[int, Prepared] = {}
    stages, first = plan_stages(args, ready)
    n = len(stages)
    summaries = []
    for k, stage in enumerate(stages[:first]):
        done = json.loads((Path(stage.run_dir) / stage.exp_name / "summary.json").read_text())
        summaries.append(done | {"stage": k + 1, "skipped": True, "final_results": {}})
    for k, stage in enumerate(stages[first:], first + 1):
        try:
            summary = run_one(stage, ready.pop(k - 1, None))
        except TrainingInterrupted as e:
            raise TrainingInterrupted(e.path, e.iteration, f"stage {k} of {n} ({stage.exp_name})") from None
        summaries.append(summary | {"stage": k, "skipped": False})
    return summaries[-1] | {"stages": summaries}


# ---------------------------------------------------------------------- evaluation


def evaluate_checkpoint(
    path: Path, args: Args, games: int, seed: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Duplicate evaluation of a checkpoint against three of each eval opponent (on the
    periodic evaluations' deals unless another ``seed`` is given), the checkpoint played on
    the CPU in ``num_workers`` processes; ``progress``: a bar per opponent on stderr."""
    from barbu_env.evaluation.tournament import evaluate

    out = {}
    for opp in split_agent_specs(args.eval_opponents):
        result = evaluate(
            [str(path), opp, opp, opp],
            games=games,
            seed=args.eval_seed if seed is None else seed,
            rules=args.rules,
            workers=args.num_workers,
            progress=progress,
        )
        entry = result.entries[0]
        ci = list(entry.score.ci95) if entry.score.ci95 else [entry.score.mean, entry.score.mean]
        out[opp] = {"mean": entry.score.mean, "ci": ci, "result": result}
    return out


def plot_learning_curve(history: list[dict], path: Path) -> None:
    """The periodic evaluations' mean scores (95% CI bands) against decisions, per opponent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for opp in sorted({k for h in history for k in h["eval"]}):
        pts = [(h["decisions"], h["eval"][opp]) for h in history if opp in h["eval"]]
        x = np.array([p[0] for p in pts]) / 1e6
        mean = np.array([p[1]["mean"] for p in pts])
        lo = np.array([p[1]["ci"][0] for p in pts])
        hi = np.array([p[1]["ci"][1] for p in pts])
        ax.plot(x, mean, marker="o", label=f"vs 3x {opp}")
        ax.fill_between(x, lo, hi, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    imitation = [h["decisions"] for h in history if h.get("imitating")]
    if imitation and len(imitation) < len(history):
        ax.axvline(max(imitation) / 1e6, color="grey", ls="--", lw=0.8, label="end of imitation")
    ax.set_xlabel("environment decisions (millions)")
    ax.set_ylabel("mean score per game (95% CI)")
    ax.set_title("Duplicate evaluation during training")
    ax.legend()
    fig.tight_layout()
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    from barbu_env.evaluation.tournament import format_table

    ns = vars(build_parser().parse_args(argv))
    config = ns.pop("config", None)
    try:
        summary = train(load_args(config, ns))
    except TrainingInterrupted as e:
        print(f"barbu train: {e}", file=sys.stderr)
        return 130
    except (TrainingDiverged, WorkerLost, StartFailed) as e:
        print(f"barbu train: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # outside the training loop: loading, the final evaluation
        print("barbu train: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:  # a bad config, rules or checkpoint: one line, not a traceback
        print(f"barbu train: error: {e}", file=sys.stderr)
        return 1
    stages = summary.get("stages", [summary])
    for one in stages:
        if "stages" in summary:
            done = " (finished before this session)" if one["skipped"] else ""
            print(f"\n=== stage {one['stage']} of {len(stages)}: {Path(one['run']).name}{done}")
        if one.get("expert"):
            from barbu_training.expert import describe

            print(f"expert iteration: {describe(one)}")
            print(f"network: {one['checkpoint']} ({one['minutes']:.1f} min)")
            continue
        for opp, result in one["final_results"].items():
            print(f"\nFinal evaluation vs 3x {opp}:\n{format_table(result)}")
        if one.get("skipped"):
            for opp, v in one["final"].items():
                print(f"final evaluation vs 3x {opp}: {v['mean']:+.1f} [{v['ci'][0]:+.1f}, {v['ci'][1]:+.1f}]")
        print(f"\nbest checkpoint: {one['best_checkpoint']}")
        if (Path(one["run"]) / "learning_curve.png").exists():
            print(f"learning curve: {Path(one['run']) / 'learning_curve.png'}")
        print(f"run folder: {one['run']} ({one['decisions']:,} decisions in {one['minutes']:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
