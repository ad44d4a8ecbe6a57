"""``barbu eval``: a duplicate tournament of four agents (``barbu_env.evaluation.tournament``);
prints the table, then writes ``--out``, ``--plot`` and ``--records``. With ``--compare B``
it plays a second tournament on the same deals and seeds, B in place of the first agent,
prints its table and the paired comparison (``compare``), and ``--out`` holds both
tournaments and the comparison."""

from __future__ import annotations

import argparse

from ..util.argtypes import nonnegative_int, positive_int
from ..util.files import make_folder
from .agents import add_table_options, agents_and_outputs
from .outputs import report_not_saved, write_outputs


def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
        help="four agents, comma-separated: registered names (random, heuristic, pimc, ...) or checkpoint "
        "paths, each with optional parameters after a colon; repeats allowed, e.g. "
        "pimc:worlds=32,heuristic,heuristic,heuristic",
    )
    p.add_argument(
        "--compare",
        metavar="B",
        help="also play agent B in place of the first agent of --agents (in every seat that agent holds), on "
        "the same deals and seeds, and print the paired difference per game of the first agent over B, at the "
        "table and in side bets (95%% CI over deal sets); e.g. --agents ppo,pimc,pimc,pimc --compare heuristic "
        "(not with --plot or --records)",
    )
    p.add_argument(
        "--games",
        type=positive_int,
        default=100,
        metavar="N",
        help="games to play, rounded up to a multiple of 4 (default 100)",
    )
    p.add_argument("--seed", type=nonnegative_int, default=0, help="tournament seed: deals and agent seeds (default 0)")
    p.add_argument(
        "--out",
        metavar="FILE.json",
        help="write the results as JSON (with --compare: both tournaments and the comparison)",
    )
    p.add_argument("--plot", metavar="FILE.png", help="draw the per-contract comparison (matplotlib)")
    p.add_argument("--records", metavar="DIR", help="save game records (JSON) in DIR: every game, or --record-games")
    p.add_argument(
        "--record-games", type=nonnegative_int, metavar="K", help="with --records: save only the first K games"
    )
    add_table_options(p, "worker processes (default: one per CPU; 1 plays in this process)")
    return p


def run(args: argparse.Namespace) -> int:
    from barbu_env.agents import parse_agents
    from barbu_env.evaluation.tournament import compare, evaluate, format_comparison, format_table, plot_results
    from barbu_env.util.json_layout import write_json

    specs, versus = parse_agents(args.agents), parse_agents(args.compare or "")
    if len(versus) > 1:
        raise ValueError(f"--compare takes one agent, not {len(versus)}")
    if versus and (args.plot or args.records):
        raise ValueError("--compare plays two tournaments: leave out --plot and --records, which draw or save one")
    placed, workers = agents_and_outputs(args, specs + versus)
    agents = placed[: len(specs)]
    make_folder(args.records, "--records")
    if args.record_games is not None and args.records is None:
        raise ValueError("--record-games needs --records DIR")
    same = {"games": args.games, "seed": args.seed, "rules": args.rules, "workers": workers}
    same["progress"] = not args.no_progress
    result = evaluate(agents, **same, records_dir=args.records, record_games=args.record_games)
    print(format_table(result))  # first: a file that cannot be written loses nothing of the table
    doc = result.to_dict()
    if versus:  # B in every seat of the first agent's spec
        second = evaluate([placed[-1] if s == specs[0] else a for s, a in zip(specs, agents)], **same)
        comparison = compare(result, second)
        print("\n" + format_table(second) + "\n\n" + format_comparison(comparison))
        doc = {"comparison": comparison.to_dict(), "tournaments": {"a": doc, "b": second.to_dict()}}
    status = 0
    if result.run.get("records_not_saved"):
        report_not_saved("eval", result.run["records_not_saved"])
        status = 1
    writes = []
    if args.out:
        writes.append((lambda: write_json(doc, args.out), f"\nresults written to {args.out}"))
    if args.plot:
        writes.append((lambda: plot_results(result, args.plot), f"plot written to {args.plot}"))
    return write_outputs("eval", writes) or status
