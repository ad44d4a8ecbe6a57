"""Seconds per decision and per game of ``pimc-ppo`` at one seat, ``ppo-finetuned`` at the others.

Plays GAMES games stepped together in one ``VectorBarbu`` (the search batches all of
them), seat 0 the guided search, and prints one JSON line: wall time, the search's
seconds per decision with a choice and per game, its certain answers, searched
decisions and rollout decisions, and the network's seconds per decision.

Run: ``python -m experiments.time_guided_search --games 8 --seed 4030`` (the figure in
docs/agents.md, on an idle 2-core box).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def measure(games: int, seed: int) -> dict:
    """Play ``games`` games from ``seed`` with ``pimc-ppo`` at seat 0; its timing and counts."""
    from barbu_env.agents import make_agent
    from barbu_env.game.driver import play
    from barbu_env.game.vector import VectorBarbu

    search = make_agent("pimc-ppo", seed=seed)
    net = make_agent("ppo-finetuned")
    spent = {"search": 0.0, "net": 0.0}
    asked = {"search": 0, "net": 0}

    def decide(rows, obs, masks, seats):
        out = np.empty(len(rows), np.int64)
        mine = seats == 0
        for key, agent, sel in (("search", search, mine), ("net", net, ~mine)):
            if sel.any():
                t = time.perf_counter()
                out[sel] = agent.act_batch(obs[sel], masks[sel])
                spent[key] += time.perf_counter() - t
                asked[key] += int(sel.sum())
        return out

    env = VectorBarbu(games, "standard", seed=seed)
    t0 = time.perf_counter()
    play(env, decide, start=env.reset(), ask_forced=False)
    wall = time.perf_counter() - t0
    return {
        "games": games,
        "wall_s": round(wall, 1),
        "search_s": round(spent["search"], 1),
        "search_decisions": asked["search"],
        "s_per_decision": round(spent["search"] / max(asked["search"], 1), 4),
        "s_per_game_for_its_seat": round(spent["search"] / games, 1),
        "net_s_per_decision": round(spent["net"] / max(asked["net"], 1), 5),
        "certain": search.certain_answers,
        "searched": search.searched,
        "rollout_decisions": search.rollout_decisions,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--seed", type=int, default=4030)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.games, args.seed)))


if __name__ == "__main__":
    main()
