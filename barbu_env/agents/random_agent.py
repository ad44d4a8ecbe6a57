"""``random``: uniform over the legal actions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import Agent
from .registry import register


@register("random")
class RandomAgent(Agent):
    """Uniform over the legal actions; deterministic for a seed.

    Each instance draws from its own generator, one ``integers(number of legal
    actions)`` per decision, whichever way it is asked: ``act``, ``act_batch`` (its rows
    in order) or together with other random agents (equal ``batch_key``: ``act_batch``
    with ``instances``, each row drawn by its instance). The actions, and the state each
    generator is left in, are the same."""

    name = "random"
    #: Every random agent is asked with the others in one call (each still draws from its own generator).
    batch_key = "random"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        return int(legal[self.rng.integers(len(legal))])

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[RandomAgent] | None = None
    ) -> np.ndarray:
        counts = (np.asarray(masks) > 0).sum(axis=1)
        if instances is not None:  # row i drawn by instances[i]
            picks = np.array([agent.rng.integers(n) for agent, n in zip(instances, counts.tolist())], dtype=np.int64)
        else:  # numpy draws an array of bounds exactly as it draws them one call at a time (a test checks it)
            picks = self.rng.integers(counts) if len(counts) else np.zeros(0, dtype=np.int64)
        # the picks[i]-th legal action of row i: the first column where the running count of legal actions passes it
        return (np.cumsum(np.asarray(masks) > 0, axis=1) > picks[:, None]).argmax(axis=1).astype(np.int64)
