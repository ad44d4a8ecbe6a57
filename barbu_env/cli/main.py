"""The ``barbu`` command line.

The commands: ``eval``, ``league``, ``replay``, ``play``, ``serve``, and ``bench``, ``train``
and ``exploit`` whose options pass through (``barbu --help`` lists them, ``barbu CMD --help``
their options; ``docs/`` has a page for each).

Each command is a module of this folder (``eval``, ``league``, ``replay``, ``play``,
``serve``; ``passthrough`` for ``bench``, ``train`` and ``exploit``) with an ``add(subparsers)``
that declares its options and a ``run(args)`` that does the work; ``COMMANDS`` registers
them. Heavy modules (numpy's users, pettingzoo, matplotlib, torch) are imported inside the
run functions, so that ``barbu --help`` answers at once. Only the commands print; the
library code they call returns values and raises exceptions.

Errors: a bad option is one line from argparse (exit status 2); a bad agent, rules file,
record or path is one line, ``barbu CMD: error: ...`` (exit status 1), never a traceback.
Outputs (``--out``, ``--plot``, ``--records``, ``--record``, ``--video``) are checked
before any work (``barbu_env.util.files.check_writable``) and written whole or not at all
after the results are printed (``barbu_env.cli.outputs``): one that cannot be written (a
full disk) is one line, ``barbu CMD: not saved: ...`` naming the file, the old file is
kept, and the exit status is 1. Ctrl-C is exit status 130; in ``play`` it still writes the
record of the game so far, marked unfinished.

Agent files in a pickle-based format (SB3 ``.zip`` models, RLlib checkpoints) run code
when loaded: ``eval``, ``league``, ``play`` and ``serve`` load them only with
``--trust-pickled`` (``barbu_env.cli.agents``, ``docs/security.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..util.argtypes import OneLineParser
from ..util.extras import MissingExtraError
from ..util.files import error_line
from . import eval as eval_command
from . import league, play, replay, serve
from .passthrough import pass_through, run_bench, run_exploit, run_train

#: name -> (declare the subcommand, run it). ``bench``, ``train`` and ``exploit`` pass their arguments through.
COMMANDS: dict[str, tuple[Callable, Callable]] = {
    "eval": (eval_command.add, eval_command.run),
    "league": (league.add, league.run),
    "replay": (replay.add, replay.run),
    "play": (play.add, play.run),
    "serve": (serve.add, serve.run),
    "bench": (
        pass_through("bench", "benchmarks.bench", "decisions per second of the engine and environments (in a clone)"),
        run_bench,
    ),
    "train": (
        pass_through("train", "barbu_training.train", "self-play PPO training (--config configs/train/quick.yaml)"),
        run_train,
    ),
    "exploit": (
        pass_through(
            "exploit",
            "barbu_training.exploit",
            "a best response to an agent, trained and measured (--target heuristic)",
        ),
        run_exploit,
    ),
}
#: Commands whose arguments are handed on untouched to another program's parser.
PASS_THROUGH = ("bench", "train", "exploit")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="barbu",
        description="Barbu, the four-player card game, as an RL environment: evaluate agents, replay games, "
        "measure speed.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"barbu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``barbu`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASS_THROUGH:  # their mains report their own errors
        try:
            return COMMANDS[argv[0]][1](argv[1:])
        except MissingExtraError as e:  # an extra is not installed: the line that says which
            print(error_line(f"barbu {argv[0]}: error: {e}"), file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # outside the training loop (which saves and reports): loading, final evaluation
            print(f"barbu {argv[0]}: interrupted", file=sys.stderr)
            return 130
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, OSError, MissingExtraError) as e:  # bad agents, rules, records or paths, or
        # a feature whose extra is not installed: a message, not a traceback, on one line
        print(error_line(f"barbu {args.command}: error: {e}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"barbu {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
