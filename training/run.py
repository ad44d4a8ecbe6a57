"""One training run: the learner (``barbu_training.ppo.PPO``) in its run folder, with its
checkpoints, rollout workers and evaluations. ``Trainer(args).run()`` trains until
``total_decisions`` or the time budget, then evaluates the best checkpoint on held-out deals.

The run folder, ``run_dir/exp_name``: ``config.yaml``, the TensorBoard log ``tb/``
(``charts/``, ``losses/``, ``eval/``: the periodic and final duplicate evaluations),
``checkpoints/latest.pt`` and ``best.pt`` (the best periodic evaluation against the first
eval opponent), ``learning_curve.png`` and, once the run has finished, ``summary.json``.
Every file but the TensorBoard log replaces the old one whole or not at all
(``barbu_env.util.files``). A fresh run replaces an earlier run's config, log, summary and
learning curve of the same name, and its checkpoints as it writes its own; the earlier
run's folder is left as it was until the new run has started (its device, its rollout
workers, then its config and TensorBoard writer, whose failure puts the old files back:
``starting_in``); a run that cannot start says why in one line (``StartFailed``,
``barbu_env.util.files.OutputError``).

Checkpoints hold the weights, the optimizer, the counters, the snapshot pool, the update's
generator, the learning curve, the best evaluation and the run's config, every tensor on
the CPU: ``--resume`` carries on exactly as the run would have (each rollout is seeded by
the run's seed and the iteration), on the run's device. ``latest.pt`` is written every
``checkpoint_minutes`` and at every periodic evaluation. Ctrl-C saves the last whole
iteration to it (``TrainingInterrupted``), as does a rollout worker that dies
(``barbu_training.workers.WorkerLost``) and an iteration whose numbers stop being finite
(``TrainingDiverged``, ``best.pt`` left as it is: no checkpoint of NaNs); a killed run
loses the work since the last one.

Rollout workers (``workers``, ``barbu_training.workers``): the rollouts play on Ray actors
while this process keeps the network and the update; one worker plays exactly the
in-process rollouts. With ``overlap`` the next rollout plays during the update, with the
weights and pool from before it (kept in checkpoints).

Progress: with ``progress`` a bar on stderr (tqdm) that moves during a rollout too (every
``rollout.PROGRESS_SECONDS``), not only when an iteration ends; without it the same figures
as a line every ``LINE_SECONDS`` on the logger ``barbu_training.run`` (``barbu train``
writes them to stderr), the first when the run starts.

A run may start from another network's weights (``init``: a checkpoint or a shipped
policy; a run with a privileged critic from a network without one,
``barbu_models.policy.with_privileged_critic``, a run with ``hands_coef`` from one without a
hands head, or without it from one with it: ``with_hands_head``), with a fresh optimizer, counters and pool.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.agents.registry import parse_agents
from barbu_env.util.files import OutputError, quote, replacing, write_text
from barbu_models.policy import (
    BarbuActorCritic,
    load_checkpoint,
    save_checkpoint,
    with_belief_rows,
    with_hands_head,
    with_privileged_critic,
)
from barbu_training.config import Args, ConfigError, shipped_belief
from barbu_training.ppo import PPO, NotFinite
from barbu_training.preflight import Prepared, prepare
from barbu_training.rollout import Collector, Rollout
from barbu_training.stages import check_startable, describe_network, resume_path
from barbu_training.workers import WorkerGroup, WorkerLost

log = logging.getLogger(__name__)
#: Seconds between two progress lines of a run without a bar (``progress`` false).
LINE_SECONDS = 30.0
#: A progress line: the bar's figures without the bar.
LINE_FORMAT = "{percentage:3.0f}% {n:,.0f}/{total:,.0f} {unit} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"

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


# ---------------------------------------------------------------------- the run


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


class Trainer(PPO):
    """One training run: ``Trainer(args).run()`` (what ``barbu_training.train.train``
    does). Everything is written under ``run_dir/exp_name``. The learner's state and
    iteration are ``PPO``'s; the run adds the learning curve (``history``), the best
    evaluation (``best``), the run folder, checkpoints and the rollout workers."""

    def __init__(self, args: Args, ready: Prepared | None = None):
        from torch.utils.tensorboard import SummaryWriter

        if args.stages:
            raise ConfigError("a config of stages is a chain of runs: train() runs it, not one Trainer")
        # Every check first (the fields were checked by Args; rules, device, precision, agents,
        # checkpoint, memory by prepare, unless the caller did: ``ready``): a bad config is a
        # ConfigError before the run folder is touched.
        ready = prepare(args) if ready is None else ready
        super().__init__(args, ready.device, ready.dtype, ready.anchor)
        self.history: list[dict] = []  # the periodic evaluations: the learning curve
        self.best: dict[str, Any] = {"score": -float("inf"), "path": None}
        self.lagged: tuple[dict, dict] | None = None  # with overlap: the next rollout's weights and pool
        if args.resume:
            self._resume(resume_path(args), ready.start)
        elif args.init:
            self._init_from(args.init, ready.start)
        self.run_path = Path(args.run_dir) / args.exp_name
        self.ckpt_dir = self.run_path / "checkpoints"
        self.boundary = self.state()  # the state after the last whole iteration (what Ctrl-C saves)
        self.bar = None  # run()'s progress bar (tqdm), kept after it closes
        self.summary_workers: dict[str, Any] = {"count": 0}  # the rollout workers, as the summary tells them
        # --- the rollouts (in this process, or on Ray workers: barbu_training.workers), then the run
        # folder, its config and its TensorBoard log: an earlier run's folder is left as it was
        # until all of them have started (put back if the folder's part fails), and workers
        # that started are ended if anything after them fails ---
        self.workers = self.pending = None
        try:
            if args.workers:
                self.workers = start_workers(args, ready.rules)
            else:
                self.collector = Collector(args, ready.rules, dtype=self.dtype)
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
        value head), and a run with ``hands_coef`` from a network without a hands head (a
        fresh one, ``with_hands_head``) or one without from a network with it (the head
        dropped: acting never reads it), and a run with ``belief_rows`` from a network
        without them (``with_belief_rows``: the policy unchanged)."""
        start, _ = loaded or load_checkpoint(checkpoint_path(spec))
        wanted = self.model.config
        try:
            check_startable(start.config, wanted)
        except ValueError as e:
            raise ValueError(f"{spec}: {e}") from None
        if wanted.state_dim and not start.config.state_dim:
            start = with_privileged_critic(start, wanted.state_dim)
        if wanted.hands_head != start.config.hands_head:
            start = with_hands_head(start, bool(wanted.hands_head))
        if wanted.belief_hidden and not start.config.belief_hidden:
            start = with_belief_rows(start, shipped_belief())
        self._load_weights(spec, start)

    def _load_weights(self, source: str, model: BarbuActorCritic) -> None:
        """This run's network takes ``model``'s weights; a network of another shape is a
        ValueError (``resume`` and ``init`` alike)."""
        if model.config != self.model.config:
            raise ValueError(
                f"{source}: the checkpoint's network ({describe_network(model.config)}) is not the one this config "
                f"builds ({describe_network(self.model.config)}): set hidden/layers/card_embed/central_critic/"
                "hands_coef/belief_rows to the checkpoint's"
            )
        self.model.load_state_dict(model.state_dict())

    def _resume(self, path: str, loaded: tuple[BarbuActorCritic, dict] | None = None) -> None:
        """Restore everything ``state`` holds from a checkpoint (``loaded``: it, loaded
        already); a checkpoint of another network shape is a ValueError."""
        resumed, payload = loaded or load_checkpoint(path)
        self._load_weights(path, resumed)
        self.restore(payload)
        self.history = json.loads(payload.get("history", "[]"))
        self.best = json.loads(payload.get("best", json.dumps(self.best)))
        if self.args.overlap and "rollout_weights" in payload:
            pool = {int(k): v for k, v in payload["rollout_pool"].items()}
            self.lagged = (payload["rollout_weights"], pool)

    def state(self) -> dict[str, Any]:
        """A copy of everything a resumed run needs to carry on exactly as this one would:
        the learner's (``PPO.state``), the learning curve and the best evaluation, and with
        overlap the weights and pool of the rollout under way."""
        run = {"history": json.dumps(self.history), "best": json.dumps(self.best)}
        return super().state() | run | self._lagged_state()

    def _lagged_state(self) -> dict[str, Any]:
        """With overlap, the weights and pool of the rollout under way (a checkpoint
        stores a snapshot shared with ``pool`` once: ``torch.save`` keeps shared tensors
        once)."""
        if self.lagged is None:
            return {}
        weights, pool = self.lagged
        return {"rollout_weights": weights, "rollout_pool": {str(k): v for k, v in pool.items()}}

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

    def bar_position(self, collecting: int = 0) -> tuple[float, float]:
        """Where the progress bar stands, ``(done, total)`` in its units, ``collecting``
        decisions into a rollout: decisions out of ``total_decisions``; with a time budget,
        percent of the run (``progress``: whichever limit ends the run first), so that its
        rate and time left are the run's. A resumed run starts where it stood."""
        args, decisions = self.args, self.decisions + collecting
        if args.time_budget_minutes:
            return 100.0 * min(1.0, max(decisions / args.total_decisions, self.progress())), 100.0
        return decisions, args.total_decisions

    def collect(self, progress: Callable[[int], object] | None = None) -> Rollout:
        """This iteration's rollout: in this process (``PPO.collect``), or on the rollout
        workers (``barbu_training.workers``), seeded alike. With ``overlap``, the workers then
        start the next iteration's rollout with the weights and pool of this one
        (``lagged``, kept in checkpoints: a resumed run plays it alike)."""
        if self.workers is None:
            return super().collect(progress)
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

    def iterate(self, progress: Callable[[int], object] | None = None) -> float:
        """One iteration (``PPO.iterate``). One whose numbers stop being finite stops the
        run: ``latest.pt`` gets the last whole iteration (``boundary``, whose weights were
        checked finite), ``best.pt`` is left as it is; raises ``TrainingDiverged``."""
        try:
            return super().iterate(progress)
        except NotFinite as e:
            path = self.checkpoint(self.ckpt_dir / "latest.pt", self.boundary)
            self.writer.close()
            raise TrainingDiverged(e.what, self.iteration, path, int(self.boundary["iteration"]), e.how) from e

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
        key = str(parse_agents(self.args.eval_opponents)[0])
        if found[key]["mean"] > self.best["score"]:
            self.best.update(score=found[key]["mean"], path=str(self.ckpt_dir / "best.pt"), iteration=self.iteration)
            with replacing(self.ckpt_dir / "best.pt") as tmp:
                shutil.copyfile(path, tmp)
        return found

    def run(self) -> dict[str, Any]:
        """Train until ``total_decisions`` or the time budget, then evaluate the best
        checkpoint; returns the summary (also written to ``summary.json``). With
        ``progress``, a bar on stderr (``bar_position``; kept as ``self.bar``) and one per
        opponent for the final evaluation; without, a line every ``LINE_SECONDS`` (module docstring)."""
        from tqdm import tqdm

        args = self.args
        done, total = self.bar_position()
        budget = bool(args.time_budget_minutes)
        unit = "%" if budget else "dec"
        self.bar = bar = tqdm(
            total=total,
            initial=done,
            unit=unit,
            bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}" if budget else None,
            disable=not args.progress,
            dynamic_ncols=True,
        )
        last_eval, due, started = "", 0.0, False  # due: when the next line is (without a bar)
        # until the first rollout's first step: a fresh install compiles the engine's kernels first
        status = f"it {self.iteration + 1} starting (a first run compiles the engine first: a minute or two)"

        def show(collecting: int = 0) -> None:
            """Where the run stands, ``collecting`` decisions into a rollout: the bar, or a line."""
            nonlocal status, due, started
            if collecting and not started:
                started, status = True, f"it {self.iteration} rollout under way"
                bar.set_postfix_str(status, refresh=False)
            n = self.bar_position(collecting)[0]
            if args.progress:
                bar.update(n - bar.n)
            elif time.monotonic() >= due:
                due = time.monotonic() + LINE_SECONDS
                elapsed, at = time.time() - self.start, min(n, total)  # the last rollout overshoots the total
                log.info(
                    tqdm.format_meter(
                        at, total, elapsed, unit=unit, initial=done, bar_format=LINE_FORMAT, postfix=status
                    )
                )

        bar.set_postfix_str(status)
        show()  # on screen from the start
        try:
            while self.decisions < args.total_decisions and self.progress() < 1.0:
                sps = self.iterate(show)
                # --- evaluation and checkpoints ---
                if args.eval_every and self.iteration % args.eval_every == 0:
                    found = self.evaluate(args.eval_games)
                    last_eval = " ".join(f"{k}:{v['mean']:+.0f}" for k, v in found.items())
                elif time.time() - self.last_checkpoint >= args.checkpoint_minutes * 60:
                    self.checkpoint(self.ckpt_dir / "latest.pt")
                self.boundary = self.state()
                phase = "imitating" if self.imitating() else "PPO"
                spent = ""
                if budget:  # what the percent is made of
                    spent = f"{self.decisions:,} dec {self.minutes():.3g}/{args.time_budget_minutes:g} min "
                status = f"{spent}it {self.iteration} {phase} SPS {sps:,.0f} eval {last_eval or '-'}"
                show()
                bar.set_postfix_str(status)
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


# ---------------------------------------------------------------------- evaluation


def evaluate_checkpoint(
    path: Path, args: Args, games: int, seed: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Duplicate evaluation of a checkpoint against three of each eval opponent (on the
    periodic evaluations' deals unless another ``seed`` is given), the checkpoint played on
    the CPU in ``num_workers`` processes; ``progress``: a bar per opponent on stderr."""
    from barbu_env.evaluation.tournament import evaluate

    out = {}
    for opp in map(str, parse_agents(args.eval_opponents)):
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
