"""``barbu league``: every pair of agents in duplicate (``barbu_env.evaluation.league``);
prints the standings, the ratings with their fit, and the margin matrix, then writes
``--out`` and ``--plot``."""

from __future__ import annotations

import argparse

from ..util.argtypes import nonnegative_int, positive_int
from ..util.files import make_folder
from .agents import add_table_options, agents_and_outputs
from .outputs import report_not_saved, write_outputs


def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "league",
        help="every pair of agents in duplicate: standings, ratings and margin matrix",
        description="Play every pair {A, B} of the agents in three duplicate tournaments (A alone against three "
        "Bs, B alone against three As, and A,B,A,B), print the standings (every head-to-head whose 95% interval "
        "excludes zero points down the list; a cycle of them is named, not ranked), one rating per agent where it "
        "agrees with them (points per game, least squares over all pairings) with its goodness of fit, and the "
        "matrix of score margins per game with 95% intervals. Results are cached per pairing: adding an agent "
        "plays only its new pairings.",
    )
    p.add_argument(
        "--agents",
        required=True,
        metavar="A,B,C,...",
        help="two or more distinct agents, comma-separated: registered names or checkpoint paths, with optional "
        "parameters after a colon, e.g. random,heuristic,heuristic-cautious,pimc:worlds=16",
    )
    p.add_argument(
        "--games",
        type=positive_int,
        default=100,
        metavar="N",
        help="games per format of each pairing, rounded up to a multiple of 4 (default 100)",
    )
    p.add_argument(
        "--seed", type=nonnegative_int, default=0, help="league seed: the deals of every tournament (default 0)"
    )
    p.add_argument(
        "--cache",
        default="runs/league_cache",
        metavar="DIR",
        help="folder of cached pairing results (default runs/league_cache)",
    )
    p.add_argument("--no-cache", action="store_true", help="play everything and cache nothing")
    p.add_argument("--out", metavar="FILE.json", help="write the league as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the margin matrix as a heatmap (matplotlib)")
    add_table_options(p, "worker processes per tournament (default: one per CPU; 1 plays in this process)")
    return p


def run(args: argparse.Namespace) -> int:
    from barbu_env.agents import parse_agents
    from barbu_env.evaluation.league import check_league_specs, format_league, plot_league, run_league
    from barbu_env.evaluation.tournament import check_agents

    agents, workers = agents_and_outputs(args, parse_agents(args.agents))
    agents = check_league_specs(agents)  # two or more, none listed twice, before any agent is made
    check_agents(agents, args.rules)  # an agent no tournament could seat: refused before the first is played
    if not args.no_cache:
        make_folder(args.cache, "--cache")  # before the league, not after it
    result = run_league(
        agents,
        games=args.games,
        seed=args.seed,
        rules=args.rules,
        cache_dir=None if args.no_cache else args.cache,
        workers=workers,
        progress=not args.no_progress,
    )
    print(format_league(result))  # first: a file that cannot be written loses nothing of the table
    status = 0
    if result.cache_not_saved:
        report_not_saved("league", result.cache_not_saved)
        status = 1
    writes = []
    if args.out:
        writes.append((lambda: result.to_json(args.out), f"\nleague written to {args.out}"))
    if args.plot:
        writes.append((lambda: plot_league(result, args.plot), f"heatmap written to {args.plot}"))
    return write_outputs("league", writes) or status
