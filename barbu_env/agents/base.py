"""The agent contract: how anything that plays Barbu is asked for its actions.

Every player — a baseline, a trained policy, a search agent, another RL library's policy
behind a thin adapter — is an :class:`Agent` with one method that matters:
``act_batch(observations, masks)`` takes a batch of the environment's observations
(float32 ``[B, OBS_DIM]``) and their legal-action masks (int8 or bool ``[B, 85]``,
nonzero: legal) and returns int64 ``[B]``, a legal action id per row. Agents see nothing
else: no hidden cards. ``act(observation, agent)`` — one observation dict as the
PettingZoo environment gives it (``{"observation", "action_mask"}``) and the acting
agent's name (``"player_0"`` ...) — is the same decision for one row.

Subclass :class:`Agent` and write either method: the base class serves the other one.
An agent that writes only ``act`` is asked row by row, each row with its acting agent's
name (a human at the terminal needs it); one that writes ``act_batch`` is asked once per
batch. An object that is not an ``Agent`` but has ``act`` (a user's class written for
the environment) is served row by row too (``barbu_env.game.driver.ask``).

Sharing: instances of one agent class often decide with one thing between them — one
network for the policies loaded from a file, one compiled kernel for heuristics under
the same rules — while each draws its own random numbers. Such instances set an equal,
hashable ``batch_key`` (not None), and their ``act_batch`` takes ``instances``: row i is
decided by ``instances[i]`` (its generator, its settings) in the same one call. Who is
asked together is the business of whoever plays many games at once — the batched play
driver (``barbu_env.game.driver``) groups its rows with ``act_rows`` — not the agent's.

>>> masks = np.zeros((3, 85), dtype=np.int8); masks[:, [52, 55]] = 1
>>> obs = np.zeros((3, 1132), dtype=np.float32)
>>> class FirstLegal(Agent):
...     name = "first"
...     def act_batch(self, observations, masks):
...         return np.asarray(masks).argmax(axis=1)
>>> FirstLegal().act_batch(obs, masks).tolist(), FirstLegal().act({"observation": obs[0], "action_mask": masks[0]})
([52, 52, 52], 52)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..game.driver import act_by_rows


class Agent:
    """Base class of the agents (see the module docstring): write ``act_batch`` or
    ``act``; the other is served from it. ``name`` labels the agent in tables;
    ``batch_key``, if not None, lets instances with equal keys be asked together
    (``act_batch(observations, masks, instances=...)``)."""

    name: str = "agent"
    batch_key: Hashable | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.act is Agent.act and cls.act_batch is Agent.act_batch:
            # Checked when the class is made, not when an instance is first asked (an
            # abstract method could not say "either of the two").
            raise TypeError(f"{cls.__name__}: an Agent writes act_batch or act (the other is served from it)")

    def act_batch(
        self,
        observations: np.ndarray,
        masks: np.ndarray,
        instances: Sequence[Agent] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> np.ndarray:
        """int64 ``[B]``: ``act`` row by row (row i by ``instances[i]`` if given), with
        ``names[i]`` as row i's acting agent's name."""
        return act_by_rows(self if instances is None else instances, observations, masks, names)

    act_batch.serves_rows = True  # type: ignore[attr-defined]  # (driver.serves_rows: this method asks act)

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        """One decision: ``act_batch`` on a batch of one row."""
        obs = np.asarray(observation["observation"])[None]
        mask = np.asarray(observation["action_mask"])[None]
        return int(self.act_batch(obs, mask)[0])
