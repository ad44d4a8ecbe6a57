"""The baselines to cite: each agent alone among three copies of each opponent, in duplicate.

For every agent of ``--agents`` and every opponent of ``--opponents`` it runs the
tournament ``barbu eval --agents AGENT,OPP,OPP,OPP --games GAMES --seed SEED`` (the
library's ``evaluate``, which that command calls) and keeps the agent's score per game,
its side-bet gain per game (settled minus raw score) and what it scored at the table (the
score less the side bets), each with its 95% interval over deal sets, with the command,
the barbu version and the commit it ran on. An agent among three copies of itself is not
played: its score is 0 (one entry holds all four seats of a zero-sum game).

Every finished cell is written at once to the JSON (``--json``) and the Markdown tables
(``--markdown``), so an interrupted run keeps what it finished; a run skips the cells the
JSON already holds at the same games, seed and rules (and drops those at others: one JSON
holds one table). Cells not measured are shown with
their command (``--dry-run`` plays nothing, and writes the tables of what is there).
``--page`` rewrites the tables inside a page between the markers ``<!-- baselines:start -->``
and ``<!-- baselines:end -->`` (docs/baselines.md).

The interval of the score at the table is conservative: the result gives the score's and
the side bets' intervals but not their covariance, and the half-width of a difference is at
most the sum of the two half-widths.

Run from a checkout, from the repository root:
``python -m experiments.baselines --games 400 --seed 5959 --json docs/baselines.json --page docs/baselines.md``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import time
from pathlib import Path

from barbu_env.game.constants import NUM_HANDS
from barbu_env.util.argtypes import nonnegative_int, positive_int
from barbu_env.util.files import write_text

#: The rows: every shipped agent but ``human`` and ``openspiel-ismcts`` (an optional extra, minutes a game).
AGENTS = ["random", "heuristic", "heuristic-cautious", "ppo", "ppo-finetuned", "ppo-expert", "ppo-belief"]
AGENTS += ["pimc", "pimc-ppo"]
OPPONENTS = ["random", "heuristic", "pimc"]
START, END = "<!-- baselines:start -->", "<!-- baselines:end -->"


def command(agent: str, opponent: str, games: int, seed: int, rules: str) -> str:
    """The ``barbu eval`` command that plays one cell.

    >>> command("ppo", "pimc", 400, 5959, "standard")
    'barbu eval --agents ppo,pimc,pimc,pimc --games 400 --seed 5959'
    """
    return f"barbu eval --agents {agent},{','.join([opponent] * 3)} --games {games} --seed {seed}" + (
        "" if rules == "standard" else f" --rules {rules}"
    )


def _figure(mean: float, ci95: tuple[float, float] | list[float] | None) -> dict:
    """A mean and its interval, rounded to 4 decimals as the tournament's JSON is."""
    return {"mean": round(mean, 4), "ci95": None if ci95 is None else [round(x, 4) for x in ci95]}


def measure(agent: str, opponent: str, games: int, seed: int, rules: str, workers: int) -> dict:
    """One cell: ``agent`` alone among three ``opponent``, its figures per game."""
    from barbu_env.evaluation.tournament import evaluate

    start = time.perf_counter()
    result = evaluate([agent] + [opponent] * 3, games=games, seed=seed, rules=rules, workers=workers)
    entry = result.entries[0]
    score, side = entry.score, entry.doubling.side_bet_gain  # side bets per hand: per game is 28 times
    at_table, ci95 = score.mean - side.mean * NUM_HANDS, None
    if score.ci95 is not None:
        half = (score.ci95[1] - score.ci95[0] + (side.ci95[1] - side.ci95[0]) * NUM_HANDS) / 2
        ci95 = (at_table - half, at_table + half)
    return {
        "agent": agent,
        "opponent": opponent,
        "command": command(agent, opponent, games, seed, rules),
        "games": result.games,
        "seed": seed,
        "rules": rules,
        "score": _figure(score.mean, score.ci95),
        "at_the_table": _figure(at_table, ci95),
        "side_bets": _figure(side.mean * NUM_HANDS, side.ci95 and [x * NUM_HANDS for x in side.ci95]),
        "barbu_version": importlib.metadata.version("barbu"),
        "commit": _commit(),
        "minutes": round((time.perf_counter() - start) / 60, 2),
        "workers": result.run["workers"],
    }


def _commit() -> str | None:
    """The checkout's commit (with ``-dirty`` when files differ from it), or None outside one."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def _interval(e: dict) -> str:
    """``+12.3 [+1.0, +23.6]``; the mean alone without an interval."""
    text = f"{e['mean']:+.1f}"
    return text if e["ci95"] is None else f"{text} [{e['ci95'][0]:+.1f}, {e['ci95'][1]:+.1f}]"


def tables(doc: dict) -> str:
    """The Markdown: scores per game (agents by opponents), then every cell with its split and command."""
    cells = {(c["agent"], c["opponent"]): c for c in doc["cells"]}
    agents = sorted(doc["agents"], key=lambda a: AGENTS.index(a) if a in AGENTS else len(AGENTS))
    opponents = sorted(doc["opponents"], key=lambda o: OPPONENTS.index(o) if o in OPPONENTS else len(OPPONENTS))
    games, seed, rules = doc["games"], doc["seed"], doc["rules"]

    def score(agent: str, opponent: str) -> str:
        if agent == opponent:
            return "0 (itself)"
        cell = cells.get((agent, opponent))
        return _interval(cell["score"]) if cell else "not measured"

    lines = [
        f"Score per game alone among three opponents, 95% interval over deal sets ({games} games, seed {seed}):",
        "",
        "| agent | " + " | ".join(f"vs 3 `{o}`" for o in opponents) + " |",
        "|---|" + "---|" * len(opponents),
    ]
    lines += [f"| `{a}` | " + " | ".join(score(a, o) for o in opponents) + " |" for a in agents]
    lines += [
        "",
        "Each cell: the score split into what the agent scored at the table and what its side bets "
        "(doubles) won, the command, the barbu version and commit, and the minutes it took:",
        "",
        "| agent | opponents | score | at the table | side bets | command | version | minutes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in agents:
        for o in opponents:
            if a == o:
                continue
            c = cells.get((a, o))
            if c is None:
                lines.append(f"| `{a}` | 3 `{o}` | not measured | | | `{command(a, o, games, seed, rules)}` | | |")
                continue
            lines.append(
                f"| `{a}` | 3 `{o}` | {_interval(c['score'])} | {_interval(c['at_the_table'])} | "
                f"{_interval(c['side_bets'])} | `{c['command']}` | {c['barbu_version']} ({c['commit']}) | "
                f"{c['minutes']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def write_page(page: Path, markdown: str) -> None:
    """Put ``markdown`` between the page's markers, in place of what was there."""
    text = page.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{page} has no {START} ... {END} markers")
    write_text(page, pattern.sub(lambda _: f"{START}\n{markdown}{END}", text))


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", default=",".join(AGENTS), help="agents, comma-separated (rows)")
    p.add_argument("--opponents", default=",".join(OPPONENTS), help="opponents, comma-separated (columns)")
    p.add_argument("--games", type=positive_int, default=400, help="games per cell (default 400)")
    p.add_argument("--seed", type=nonnegative_int, default=5959, help="tournament seed of every cell (default 5959)")
    p.add_argument("--rules", default="standard", help="rules preset (default standard)")
    p.add_argument("--workers", type=positive_int, default=1, help="worker processes per tournament (default 1)")
    p.add_argument("--json", required=True, type=Path, help="the figures; cells already in it are not played again")
    p.add_argument("--markdown", type=Path, help="write the tables to this file")
    p.add_argument("--page", type=Path, help="rewrite the tables between the markers of this page")
    p.add_argument("--dry-run", action="store_true", help="write the tables, the cells not played shown as such")
    args = p.parse_args(argv)
    agents, opponents = args.agents.split(","), args.opponents.split(",")
    same = {"games": -(-args.games // 4) * 4, "seed": args.seed, "rules": args.rules}  # as the tournament rounds
    doc = json.loads(args.json.read_text()) if args.json.exists() else {}
    kept = [c for c in doc.get("cells", []) if all(c[k] == v for k, v in same.items())]
    doc = {
        **same,
        "agents": list(dict.fromkeys(doc.get("agents", []) + agents)),
        "opponents": list(dict.fromkeys(doc.get("opponents", []) + opponents)),
        "cells": kept,
    }

    def save() -> None:
        write_text(args.json, json.dumps(doc, indent=1) + "\n")
        markdown = tables(doc)
        if args.markdown:
            write_text(args.markdown, markdown)
        if args.page:
            write_page(args.page, markdown)

    save()
    for o in [] if args.dry_run else opponents:
        for a in agents:
            if a == o or any(c["agent"] == a and c["opponent"] == o for c in doc["cells"]):
                continue
            doc["cells"].append(measure(a, o, doc["games"], args.seed, args.rules, args.workers))
            save()
            print(f"{a} vs 3 {o}: {_interval(doc['cells'][-1]['score'])} ({doc['cells'][-1]['minutes']:.1f} min)")
    return doc


if __name__ == "__main__":
    main()
