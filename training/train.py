"""``barbu train``: one run, or a chain of runs (``stages``).

``train(args)`` runs PPO (``barbu_training.run.Trainer``), or expert iteration for a run
with an ``expert`` mapping (``barbu_training.expert.train_expert``). A config of ``stages``
is a chain: the stages run in order, each from the previous one's checkpoint
(``barbu_training.stages.stage_args``), all checked before the first starts; ``--resume
auto`` skips the stages that finished and resumes the first that did not.
``configs/train/ppo-finetuned.yaml`` is the chain that made ``ppo-finetuned``,
``configs/train/ppo-expert.yaml`` the one that made ``ppo-expert``.

Run: ``barbu train --config configs/train/quick.yaml`` (any field can be overridden:
``--seed 3 --total-decisions 2000000``), or ``python -m barbu_training.train ...``. A config
that fails a check (``barbu_training.config``: every field's range, then
``barbu_training.preflight.prepare``) is a ``ConfigError`` before anything on disk is
touched; ``main`` says so, and why a run stopped, in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

from barbu_env.util.files import error_line
from barbu_training.config import Args, ConfigError, model_config
from barbu_training.config_cli import build_parser, load_args
from barbu_training.expert import describe, train_expert
from barbu_training.preflight import Prepared, prepare
from barbu_training.run import StartFailed, Trainer, TrainingDiverged, TrainingInterrupted
from barbu_training.stages import check_startable, stage_args
from barbu_training.workers import WorkerLost


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
    checkpoint, not written yet, without it: ``stage_args`` checked its network's shape, and
    after an expert stage with its own ``init`` that init's network is checked against it); a
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
                    f"of {n} ({stages[first].exp_name!r}): resume with auto, or a checkpoint in {folder}"
                )
            stages[first] = dataclasses.replace(stages[first], resume=resume)
    made = None  # the network the stage before makes, when known (an expert stage trains its init's as it is)
    for k in range(first, n):
        unwritten = k > first and "init" not in args.stages[k]  # the previous stage's checkpoint, to come
        try:
            found = prepare(stages[k], written=not unwritten)
            if unwritten and made is not None and not stages[k].expert:
                try:
                    check_startable(made, model_config(stages[k]))
                except ValueError as e:
                    raise ConfigError(f"init: stage {k}'s network: {e}") from None
        except ConfigError as e:
            raise ConfigError(f"stages: stage {k + 1} of {n} ({stages[k].exp_name!r}): {e}") from None
        if ready is not None and not unwritten:
            ready[k] = found
        if not stages[k].expert:
            made = model_config(stages[k])
        elif not unwritten:
            made = found.start[0].config if found.start is not None else None
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
            raise TrainingInterrupted(e.path, e.iteration, f"stage {k} of {n} ({stage.exp_name!r})") from None
        summaries.append(summary | {"stage": k, "skipped": False})
    return summaries[-1] | {"stages": summaries}


@contextlib.contextmanager
def progress_lines() -> Any:
    """The package's log (the run's progress lines without a bar: ``barbu_training.run``) on stderr."""
    logger, handler = logging.getLogger("barbu_training"), logging.StreamHandler()
    handler.setFormatter(logging.Formatter("barbu train: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def main(argv: list[str] | None = None) -> int:
    from barbu_env.evaluation.tournament import format_table

    ns = vars(build_parser().parse_args(argv))
    config = ns.pop("config", None)
    try:
        with progress_lines():
            summary = train(load_args(config, ns))
    except TrainingInterrupted as e:
        print(error_line(f"barbu train: {e}"), file=sys.stderr)
        return 130
    except (TrainingDiverged, WorkerLost, StartFailed) as e:
        print(error_line(f"barbu train: error: {e}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # outside the training loop: loading, the final evaluation
        print("barbu train: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:  # a bad config, rules or checkpoint: one line, not a traceback
        print(error_line(f"barbu train: error: {e}"), file=sys.stderr)
        return 1
    stages = summary.get("stages", [summary])
    for one in stages:
        if "stages" in summary:
            done = " (finished before this session)" if one["skipped"] else ""
            print(f"\n=== stage {one['stage']} of {len(stages)}: {Path(one['run']).name}{done}")
        if one.get("expert"):
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
