"""Seconds per decision of a search with and without ``worlds_from=belief``, on the same positions.

Collects the decisions with a choice of GAMES games of the heuristic (every EVERY-th
step), then times ``act_batch`` of ``AGENT`` (``pimc`` or ``pimc-ppo``) with uniform worlds
and with the belief network's, alternating REPEATS times on the same positions (all of them
in one batch, then one at a time), and prints one JSON line: milliseconds per decision of
each, the median of the repeats, and their ratio. The belief search's extra work is one
network forward for the rows searched together, the constraints and the fit of the
sampler's weights per row; the rollouts are the same.

Run: ``python -m experiments.time_belief_search --agent pimc --games 32 --seed 5`` (the
figure in docs/belief.md).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def positions(games: int, every: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the decisions with a choice at every ``every``-th step of
    ``games`` heuristic games."""
    from barbu_env.agents import make_agent
    from barbu_env.game.vector import VectorBarbu

    player = make_agent("heuristic", seed=seed)
    vec = VectorBarbu(games, seed=seed)
    obs, masks, _ = vec.reset()
    kept_obs, kept_masks = [], []
    for t in range(1600):
        if t % every == every // 2:
            keep = masks.sum(axis=1) > 1
            kept_obs.append(obs[keep])
            kept_masks.append(masks[keep])
        obs, masks, *_ = vec.step(player.act_batch(obs, masks))
    return np.concatenate(kept_obs), np.concatenate(kept_masks)


def measure(agent: str, games: int, every: int, one_at_a_time: int, repeats: int, seed: int) -> dict:
    from barbu_env.agents import make_agent

    obs, masks = positions(games, every, seed)
    searches = {w: make_agent(agent, seed=seed, worlds_from=w) for w in ("uniform", "belief")}
    for search in searches.values():
        search.act_batch(obs[:2], masks[:2])  # compiled and loaded before the clock
    batched: dict[str, list[float]] = {w: [] for w in searches}
    single: dict[str, list[float]] = {w: [] for w in searches}
    for _ in range(repeats):
        for w, search in searches.items():
            t = time.perf_counter()
            search.act_batch(obs, masks)
            batched[w].append(1000 * (time.perf_counter() - t) / len(obs))
            t = time.perf_counter()
            for i in range(one_at_a_time):
                search.act_batch(obs[i : i + 1], masks[i : i + 1])
            single[w].append(1000 * (time.perf_counter() - t) / one_at_a_time)
    med = {k: {w: float(np.median(v)) for w, v in d.items()} for k, d in (("batched", batched), ("single", single))}
    return {
        "agent": agent,
        "decisions": len(obs),
        "ms_per_decision_batched": {w: round(v, 2) for w, v in med["batched"].items()},
        "ms_per_decision_one_at_a_time": {w: round(v, 2) for w, v in med["single"].items()},
        "belief_over_uniform_batched": round(med["batched"]["belief"] / med["batched"]["uniform"], 3),
        "belief_over_uniform_one_at_a_time": round(med["single"]["belief"] / med["single"]["uniform"], 3),
        "repeats": repeats,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=("pimc", "pimc-ppo"), default="pimc")
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--one-at-a-time", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.agent, args.games, args.every, args.one_at_a_time, args.repeats, args.seed)))


if __name__ == "__main__":
    main()
