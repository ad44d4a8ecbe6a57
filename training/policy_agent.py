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
    """A masked actor-critic playing by sampling its policy (or its most likely action
    with ``deterministic=True``); deterministic for a seed."""

    def __init__(self, model: BarbuActorCritic, seed: int = 0, deterministic: bool = False, name: str = "policy"):
        self.model = model
        self.deterministic = deterministic
        self.name = name
        self.generator = torch.Generator().manual_seed(int(seed) % (2**63))

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        return int(self.act_batch(observation["observation"][None], observation["action_mask"][None])[0])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.model.act(observations, masks.astype(bool), self.deterministic, self.generator)


def load_policy_agent(path: str | Path, seed: int = 0, deterministic: bool = False, **_: Any) -> PolicyAgent | None:
    """A PolicyAgent from a checkpoint written by ``models.policy.save_checkpoint``; None for
    other files."""
    if Path(path).suffix != ".pt":
        return None
    torch.set_num_threads(1)
    return PolicyAgent(cached_model(path), seed=seed, deterministic=deterministic, name=Path(path).stem)
