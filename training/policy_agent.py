"""Trained policies as agents: ``make_agent("runs/x/checkpoints/best.pt")`` works anywhere an
agent name does (``barbu eval --agents runs/x/checkpoints/best.pt,heuristic,...``).

The loader is declared under the ``barbu.agent_loaders`` entry point, so the agent
registry finds it without importing torch for the baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.policy import BarbuActorCritic, MaskedCategorical, load_checkpoint

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
    torch generator (``deterministic=False``).

    A ``BatchAgent`` (``act_batch``: one forward pass for a batch) and a ``GroupAgent``:
    instances on the same network share its ``batch_key`` (agents loaded from the same
    file do, through the model cache), so a tournament asks them together through
    ``act_group`` — one forward pass for every game's decision, then each instance picks
    its own rows' actions, a sampling one drawing with its own generator (batched
    Gumbel-max). The trainer plays its pool snapshots as sampling PolicyAgents."""

    def __init__(self, model: BarbuActorCritic, seed: int = 0, deterministic: bool = True, name: str = "policy"):
        self.model = model
        self.batch_key = model
        self.deterministic = deterministic
        self.name = name
        self.generator = torch.Generator().manual_seed(seed)

    def probs_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities ``[B, 85]`` (exactly 0 off the mask)."""
        return _distribution(self.model, observations, masks).probs.numpy()

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        return int(self.act_batch(observation["observation"][None], observation["action_mask"][None])[0])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.act_group([self] * len(observations), observations, masks)

    @classmethod
    def act_group(cls, instances: Sequence[PolicyAgent], observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Row i's action by ``instances[i]`` (all on one network): one forward pass; the
        greedy instances' rows take their most likely legal action, each sampling
        instance draws its rows' actions with its own generator."""
        dist = _distribution(instances[0].model, observations, masks)
        sampling: dict[int, list[int]] = {}  # a sampling instance's rows, by identity
        for i, agent in enumerate(instances):
            if not agent.deterministic:
                sampling.setdefault(id(agent), []).append(i)
        if len(sampling) == 1 and len(next(iter(sampling.values()))) == len(instances):  # one sampler, every row
            return dist.sample(instances[0].generator).numpy().astype(np.int64)
        actions = dist.probs.argmax(dim=-1)
        for rows in sampling.values():
            r = torch.tensor(rows)
            actions[r] = MaskedCategorical(dist.logits[r], dist.mask[r]).sample(instances[rows[0]].generator)
        return actions.numpy().astype(np.int64)


def _distribution(model: BarbuActorCritic, observations: np.ndarray, masks: np.ndarray) -> MaskedCategorical:
    """The network's masked distribution over a numpy batch (no gradients)."""
    with torch.no_grad():
        return model.distribution(torch.as_tensor(observations, dtype=torch.float32), torch.as_tensor(masks))


def load_policy_agent(path: str | Path, seed: int = 0, deterministic: bool = True, **_: Any) -> PolicyAgent | None:
    """A PolicyAgent (greedy unless ``deterministic=False``) from a checkpoint written by
    ``models.policy.save_checkpoint``; None for other files."""
    if Path(path).suffix != ".pt":
        return None
    torch.set_num_threads(1)
    return PolicyAgent(cached_model(path), seed=seed, deterministic=deterministic, name=Path(path).stem)
