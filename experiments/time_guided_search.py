"""Seconds per decision and per game of ``pimc-ppo`` at one seat, ``ppo-finetuned`` at the others.

``python experiments/time_guided_search.py GAMES SEED``: GAMES games stepped together in one
``VectorBarbu`` (the search batches all of them), seat 0 the guided search; prints one JSON
line: wall time, the search's seconds per decision with a choice and per game, its
certain answers, searched decisions and rollout decisions, the network's seconds per
decision. The figure in docs/agents.md is ``8 4030`` on an idle 2-core box.
"""
import sys, time, json
import numpy as np
from barbu_env.agents import make_agent
from barbu_env.driver import play
from barbu_env.vector import VectorBarbu

games = int(sys.argv[1]); seed = int(sys.argv[2])
search = make_agent("pimc-ppo", seed=seed)
net = make_agent("ppo-finetuned")
spent = {"search": 0.0, "net": 0.0}; asked = {"search": 0, "net": 0}

def decide(rows, obs, masks, seats):
    out = np.empty(len(rows), np.int64)
    mine = seats == 0
    for key, agent, sel in (("search", search, mine), ("net", net, ~mine)):
        if sel.any():
            t = time.perf_counter()
            out[sel] = agent.act_batch(obs[sel], masks[sel])
            spent[key] += time.perf_counter() - t; asked[key] += int(sel.sum())
    return out

env = VectorBarbu(games, "standard", seed=seed)
t0 = time.perf_counter()
play(env, decide, start=env.reset(), ask_forced=False)
wall = time.perf_counter() - t0
print(json.dumps({"games": games, "wall_s": round(wall, 1), "search_s": round(spent["search"], 1),
    "search_decisions": asked["search"], "s_per_decision": round(spent["search"] / asked["search"], 4),
    "s_per_game_for_its_seat": round(spent["search"] / games, 1), "net_s_per_decision": round(spent["net"] / max(asked["net"], 1), 5),
    "certain": search.certain_answers, "searched": search.searched, "rollout_decisions": search.rollout_decisions}))
