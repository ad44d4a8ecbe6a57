"""``random``: uniform over the legal actions."""

from __future__ import annotations

import numpy as np

from .registry import register


class RandomAgent:
    """Uniform over the legal actions; deterministic for a seed."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        return int(legal[self.rng.integers(len(legal))])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        # Uniform over each row's legal actions: the argmax of masked uniform noise.
        noise = self.rng.random(masks.shape)
        return np.where(masks > 0, noise, -1.0).argmax(axis=1)


@register("random")
def make_random(seed: int = 0, **_: object) -> RandomAgent:
    return RandomAgent(seed)
