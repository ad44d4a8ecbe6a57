"""The agent contract: how anything that plays Barbu is asked for its actions.

Every player — a baseline, a trained policy, a search agent, another RL library's policy
behind a thin adapter — is an :class:`Agent`: ``act(observation, agent)`` takes the
observation dict the environment gives (``{"observation": float32[OBS_DIM],
"action_mask": int8[85]}``) and the acting agent's name (``"player_0"`` ...) and returns a
legal action id. Agents see nothing else: no hidden cards.

Agents that can decide many positions at once (one network call, one compiled kernel
call) are :class:`BatchAgent`\\ s: ``act_batch(observations [B, OBS_DIM], masks [B, 85])``
returns int64 ``[B]``, row by row the action ``act`` would choose (for an agent that
draws at random: drawn from the same distribution).

Agents of which many *instances* play at once but decide together — one network shared
by the instances of a tournament, each instance with its own seeded generator — are
:class:`GroupAgent`\\ s: instances whose ``batch_key`` is equal (and not None) are asked
together through ``type(agent).act_group(instances, observations, masks)``, row i for
``instances[i]``.

Everything that plays many decisions at once (the duplicate tournament, the trainer's
opponents) asks through one function, :func:`act_rows`: row i of a batch is decided by
``agents[i]``, grouped so that each distinct agent or group is called once.

>>> from barbu_env.agents import make_agent
>>> masks = np.zeros((3, 85), dtype=np.int8); masks[:, [52, 55]] = 1
>>> obs = np.zeros((3, 1132), dtype=np.float32)
>>> a = make_agent("random", seed=1)
>>> actions = act_rows([a, a, a], obs, masks)
>>> actions.dtype, sorted(set(actions) - {52, 55})
(dtype('int64'), [])
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Picks a legal action id from an observation dict (see the module docstring);
    ``name`` is a short label for tables."""

    name: str

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int: ...


@runtime_checkable
class BatchAgent(Agent, Protocol):
    """An agent that also decides a batch of positions in one call: ``act_batch`` returns
    int64 ``[B]``, row by row what ``act`` would choose."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class GroupAgent(Agent, Protocol):
    """An agent whose instances share what they decide with (a network): instances with
    equal ``batch_key`` are asked together by the class method ``act_group(instances,
    observations, masks)``, which returns int64 ``[B]`` with row i decided by
    ``instances[i]`` (each instance drawing with its own generator)."""

    batch_key: Hashable

    @classmethod
    def act_group(cls, instances: Sequence[GroupAgent], observations: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


def act_batch(
    agent: Agent, observations: np.ndarray, masks: np.ndarray, names: Sequence[str] | None = None
) -> np.ndarray:
    """One agent's actions for a batch ``[B, OBS_DIM]`` / ``[B, 85]``: its own
    ``act_batch`` if it has one, else ``act`` row by row (``names[i]`` the acting agent's
    name of row i, if given)."""
    batch = getattr(agent, "act_batch", None)  # (not isinstance with the Protocol: that costs ~40 us a call)
    if batch is not None:
        return np.asarray(batch(observations, masks), dtype=np.int64)
    names = names if names is not None else [None] * len(observations)
    return np.array(
        [agent.act({"observation": o, "action_mask": m}, n) for o, m, n in zip(observations, masks, names)],
        dtype=np.int64,
    ).reshape(len(observations))


def group_ids(agents: Sequence[Agent]) -> np.ndarray:
    """int64 ``[B]``: a number per group of agents that :func:`act_rows` asks in one call
    (the instances of a :class:`GroupAgent` with equal ``batch_key``; one agent object),
    numbered in order of first appearance.

    >>> from barbu_env.agents import make_agent
    >>> a, b = make_agent("heuristic", seed=1), make_agent("heuristic", seed=2)
    >>> c = make_agent("random", seed=3)
    >>> group_ids([c, a, b, c, a]).tolist()
    [0, 1, 1, 0, 1]
    """
    ids: dict[tuple[str, Hashable], int] = {}
    keys = (getattr(agent, "batch_key", None) for agent in agents)
    return np.array(
        [ids.setdefault(("object", id(a)) if k is None else ("group", k), len(ids)) for a, k in zip(agents, keys)],
        dtype=np.int64,
    )


def act_rows(
    agents: Sequence[Agent],
    observations: np.ndarray,
    masks: np.ndarray,
    names: Sequence[str] | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Actions int64 ``[B]`` for a batch in which row i is decided by ``agents[i]``.

    Rows are grouped so that each agent is called once: instances of a
    :class:`GroupAgent` with equal ``batch_key`` through ``act_group``; the rows of one
    agent object through :func:`act_batch` (its ``act_batch``, else ``act`` row by row,
    with ``names[i]`` as the acting agent's name), groups in order of their first row.
    ``groups``: the rows' :func:`group_ids`, for a caller that asks the same agents step
    after step and numbers them once, over all of them (grouping costs more per row than
    some agents' decisions); by default numbered here."""
    actions = np.empty(len(agents), dtype=np.int64)
    groups = group_ids(agents) if groups is None else np.asarray(groups)
    for group in dict.fromkeys(groups.tolist()):
        rows = np.flatnonzero(groups == group)
        first = agents[rows[0]]
        if getattr(first, "batch_key", None) is not None:
            chosen = type(first).act_group([agents[i] for i in rows], observations[rows], masks[rows])
        else:
            chosen = act_batch(
                first, observations[rows], masks[rows], None if names is None else [names[i] for i in rows]
            )
        actions[rows] = np.asarray(chosen, dtype=np.int64)
    return actions
