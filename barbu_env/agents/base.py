"""The agent interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Picks a legal action id from an observation dict.

    ``observation`` is what ``env.last()`` / ``env.observe(agent)`` returns:
    ``{"observation": float32[OBS_DIM], "action_mask": int8[85]}``; ``agent`` is the acting
    agent's name ("player_0" ...), for agents that care. Agents see nothing else: no
    hidden cards. ``name`` is a short label for tables.
    """

    name: str

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int: ...


@runtime_checkable
class BatchAgent(Agent, Protocol):
    """An agent that can also act for many observations at once (e.g. one network call)."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


def act_batch(agent: Agent, observations: np.ndarray, masks: np.ndarray, agents: Sequence[str] | None = None) -> np.ndarray:
    """Actions for a batch ``[B, OBS_DIM]`` / ``[B, 85]``: the agent's own ``act_batch`` if it has
    one, else ``act`` row by row."""
    if hasattr(agent, "act_batch"):
        return np.asarray(agent.act_batch(observations, masks), dtype=np.int64)
    names = agents if agents is not None else [None] * len(observations)
    return np.array(
        [agent.act({"observation": o, "action_mask": m}, n) for o, m, n in zip(observations, masks, names)],
        dtype=np.int64,
    )
