"""Trained policies as agents: ``make_agent("runs/x/checkpoints/best.pt")`` works anywhere an
agent name does (``barbu eval --agents runs/x/checkpoints/best.pt,heuristic,...``).

The loader is declared under the ``barbu.agent_loaders`` entry point, so the agent
registry finds it without importing torch for the baselines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.policy import BarbuActorCritic, load_checkpoint

#: (resolved path, mtime) -> model: tournaments build agents for every game.
_CACHE: dict[tuple[str, float], BarbuActorCritic] = {}


def cached_model(path: str | Path) -> BarbuActorCritic:
    p = Path(path).resolve()
    key = (str(p), p.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = load_checkpoint(p)[0]
    return _CACHE[key]


class PolicyAgent:
    """A masked actor-critic playing its most likely legal action (``deterministic=True``,
    the default: the usual way to evaluate a trained policy, and worth ~100 points per
    game against the heuristic over sampling) or sampling its policy with its own seeded
    generator (``deterministic=False``).

    Agents loaded from the same file share one network (``batch_key``): the tournament
    asks them together (``probs_batch`` for many games' decisions in one forward pass),
    then each draws its action with its own generator (``choose``)."""

    def __init__(self, model: BarbuActorCritic, seed: int = 0, deterministic: bool = True, name: str = "policy"):
        self.model = model
        self.batch_key = model
        self.deterministic = deterministic
        self.name = name
        self.rng = np.random.default_rng(seed)

    def probs_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities ``[B, 85]`` (exactly 0 off the mask)."""
        with torch.no_grad():
            dist = self.model.distribution(torch.as_tensor(observations, dtype=torch.float32), torch.as_tensor(masks))
        return dist.probs.numpy()

    def choose(self, probs: np.ndarray, mask: np.ndarray) -> int:
        """An action drawn from ``probs`` with this agent's generator (its mode if deterministic)."""
        if self.deterministic:
            return int(np.argmax(probs))
        cdf = np.cumsum(probs, dtype=np.float64)
        action = int(np.searchsorted(cdf, self.rng.random() * cdf[-1], side="right"))
        return action if mask[min(action, len(mask) - 1)] else int(np.argmax(probs))

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        mask = observation["action_mask"]
        return self.choose(self.probs_batch(observation["observation"][None], mask[None])[0], mask)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        probs = self.probs_batch(observations, masks)
        return np.array([self.choose(p, m) for p, m in zip(probs, masks)], dtype=np.int64)


def load_policy_agent(path: str | Path, seed: int = 0, deterministic: bool = True, **_: Any) -> PolicyAgent | None:
    """A PolicyAgent (greedy unless ``deterministic=False``) from a checkpoint written by
    ``models.policy.save_checkpoint``; None for other files."""
    if Path(path).suffix != ".pt":
        return None
    torch.set_num_threads(1)
    return PolicyAgent(cached_model(path), seed=seed, deterministic=deterministic, name=Path(path).stem)
