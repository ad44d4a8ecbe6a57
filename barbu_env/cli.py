"""The ``barbu`` command line.

==============================================  ===============================================
command                                         what it does
==============================================  ===============================================
``barbu eval --agents A,B,C,D --games N``       duplicate tournament (``barbu_env/tournament.py``):
``[--seed S] [--rules R] [--out F.json]``       prints a table, writes JSON, a plot, game
``[--plot F.png] [--records DIR]``              records
``barbu replay FILE [--hand N ...]``            checks a game record by replaying it through
                                                the environment, then prints it hand by hand
``barbu bench [...]``                           decisions per second (``barbu_env.bench``;
                                                its options pass through)
``barbu train --config F [--field V ...]``      self-play PPO (``training/ppo.py``; its options
                                                pass through)
==============================================  ===============================================

Each command is a ``_add_<name>(subparsers)`` that declares its options and a
``_run_<name>(args)`` that does the work; ``COMMANDS`` registers them. Heavy modules
(numpy's users, pettingzoo, matplotlib, torch) are imported inside the run functions, so
that ``barbu --help`` answers at once. Only the command mains print; the library code
they call returns values and raises exceptions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

# ---------------------------------------------------------------------- eval


def _add_eval(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "eval",
        help="duplicate tournament of four agents",
        description="Duplicate tournament: every deal set (28 deals and the first declarer) is played in the "
        "four cyclic seatings, so each agent plays every deal from every seat. Prints a table of scores "
        "per game (s.e. and 95% CI over deal sets), per-contract means, doubling and head to head.",
    )
    p.add_argument(
        "--agents",
        required=True,
        metavar="A,B,C,D",
        help="four agents, comma-separated: registered names (random, heuristic, ...) or checkpoint "
        "paths; repeats allowed, e.g. heuristic,random,random,random",
    )
    p.add_argument(
        "--games", type=int, default=100, metavar="N", help="games to play, rounded up to a multiple of 4 (default 100)"
    )
    p.add_argument("--seed", type=int, default=0, help="tournament seed: deals and agent seeds (default 0)")
    p.add_argument(
        "--rules", default="standard", metavar="PRESET", help="rules preset name or YAML file (default standard)"
    )
    p.add_argument("--out", metavar="FILE.json", help="write the results as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the per-contract comparison (matplotlib)")
    p.add_argument("--records", metavar="DIR", help="save game records (JSON) in DIR: every game, or --record-games")
    p.add_argument("--record-games", type=int, metavar="K", help="with --records: save only the first K games")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="W",
        help="worker processes (default: one per CPU; 1 plays in this process)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _run_eval(args: argparse.Namespace) -> int:
    from barbu_env.tournament import evaluate, format_table, plot_results

    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    if args.record_games is not None and args.records is None:
        raise ValueError("--record-games needs --records DIR")
    result = evaluate(
        agents,
        games=args.games,
        seed=args.seed,
        rules=args.rules,
        workers=args.workers,
        progress=not args.no_progress,
        records_dir=args.records,
        record_games=args.record_games,
    )
    print(format_table(result))
    if args.out:
        result.to_json(args.out)
        print(f"\nresults written to {args.out}")
    if args.plot:
        plot_results(result, args.plot)
        print(f"plot written to {args.plot}")
    return 0


# ---------------------------------------------------------------------- replay


def _add_replay(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        help="check a game record and print it hand by hand",
        description="Replay a game record's actions through the environment on its deals, check that every "
        "hand result and the final scores come out as recorded, and print the game hand by hand.",
    )
    p.add_argument("file", metavar="FILE", help="a game record (JSON), e.g. from barbu eval --records")
    p.add_argument(
        "--hand", type=_hand_number, action="append", metavar="N", help="print only hand N (1-28); repeatable"
    )
    p.add_argument("--no-check", action="store_true", help="print without replaying through the environment first")
    return p


def _hand_number(text: str) -> int:
    from .engine import NUM_HANDS

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a hand number is an integer, not {text!r}") from None
    if not 1 <= n <= NUM_HANDS:
        raise argparse.ArgumentTypeError(f"hands are numbered 1 to {NUM_HANDS}, not {n}")
    return n


def _run_replay(args: argparse.Namespace) -> int:
    from .records import GameRecord, render_record, replay_record

    record = GameRecord.load(args.file)
    if not args.no_check:
        hands, _ = replay_record(record)
    print(render_record(record, hands=args.hand))
    if not args.no_check:
        print(f"Replayed through barbu_env.env(): {len(hands)} hand results and the final scores match the record.")
    return 0


# ---------------------------------------------------------------------- bench and train


def _pass_through(name: str, module: str, help: str) -> Callable[[argparse._SubParsersAction], argparse.ArgumentParser]:
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


def _run_bench(argv: Sequence[str]) -> int:
    from . import bench

    bench.main(list(argv))
    return 0


def _run_train(argv: Sequence[str]) -> int:
    from training import ppo

    return ppo.main(list(argv))


# ---------------------------------------------------------------------- the command

#: name -> (declare the subcommand, run it). ``bench`` and ``train`` pass their arguments through.
COMMANDS: dict[str, tuple[Callable, Callable]] = {
    "eval": (_add_eval, _run_eval),
    "replay": (_add_replay, _run_replay),
    "bench": (
        _pass_through("bench", "barbu_env.bench", "decisions per second of the engine and the environment"),
        _run_bench,
    ),
    "train": (
        _pass_through("train", "training.ppo", "self-play PPO training (--config configs/train/quick.yaml)"),
        _run_train,
    ),
}
#: Commands whose arguments are handed on untouched to another program's parser.
PASS_THROUGH = ("bench", "train")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="barbu",
        description="Barbu, the four-player card game, as an RL environment: evaluate agents, replay games, "
        "measure speed.",
    )
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
        except KeyboardInterrupt:  # outside the training loop (which saves and reports): loading, final evaluation
            print(f"barbu {argv[0]}: interrupted", file=sys.stderr)
            return 130
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, OSError) as e:  # bad agents, rules, records or paths: a message, not a traceback
        print(f"barbu {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"barbu {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
