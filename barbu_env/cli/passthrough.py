"""``barbu bench``, ``barbu train`` and ``barbu exploit``: every argument after the command
goes to the program's own parser (``benchmarks.bench``, ``barbu_training.train``,
``barbu_training.exploit``), which reports its own errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..util.extras import require


def pass_through(name: str, module: str, help: str) -> Callable[[argparse._SubParsersAction], argparse.ArgumentParser]:
    """A subcommand whose options all go to ``module``'s own parser (``barbu NAME --help``
    shows them)."""

    def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help,
            add_help=False,
            description=f"Runs python -m {module}; every option after '{name}' is passed to it.",
        )

    return add


def run_bench(argv: Sequence[str]) -> int:
    checkout = _checkout_with_benchmarks()
    if checkout is not None and checkout not in sys.path:  # the console script's path lacks it
        sys.path.insert(0, checkout)
    try:
        from benchmarks import bench
    except ImportError:
        raise SystemExit(
            "barbu bench runs from a checkout of the repository (benchmarks/ is not in the wheel): "
            "cd into the clone, then barbu bench (or python -m benchmarks.bench)"
        ) from None

    return bench.main(list(argv), prog="barbu bench")


def _checkout_with_benchmarks() -> str | None:
    """The working folder or the nearest folder above it that is a checkout of barbu (its
    ``benchmarks/bench.py`` beside a ``pyproject.toml`` of the project ``barbu``); None if
    there is none (another project's benchmarks are never run)."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        project = folder / "pyproject.toml"
        if (folder / "benchmarks" / "bench.py").is_file() and project.is_file():
            if 'name = "barbu"' in project.read_text(errors="replace"):
                return str(folder)
    return None


#: What a training run imports from the ``train`` extra (TensorBoard logs, the learning
#: curve): checked before it starts, not when it ends.
TRAIN_MODULES = ("torch", "tensorboard", "matplotlib")


def run_train(argv: Sequence[str]) -> int:
    for module in TRAIN_MODULES:
        require(module, "train", "barbu train")
    from barbu_training import train

    return train.main(list(argv))


def run_exploit(argv: Sequence[str]) -> int:
    for module in TRAIN_MODULES:
        require(module, "train", "barbu exploit")
    from barbu_training import exploit

    return exploit.main(list(argv))
