"""Agents: anything that picks a legal action from an observation.

Every player — a baseline, a trained policy, a human at the terminal, another RL
library's policy behind a thin adapter — is an ``Agent`` (``barbu_env.agents.base``):
``act_batch(observations, masks)`` returns a legal action id per row, and
``act(observation, agent)`` decides one observation dict as the environment gives it
(``{"observation", "action_mask"}``, the acting agent's name ``"player_0"`` ...); a
subclass writes either, the base class serves the other.

Agents are made from a spec (``barbu_env.agents.registry.AgentSpec``), so that ``--agents
heuristic,random`` works from the command line: ``make_agent("random", seed=0)``. A spec
names a registered agent, a file handed to the loaders registered with
``register_loader`` (trained checkpoints; a pickle-based file, an SB3 ``.zip`` or an RLlib
checkpoint, only with ``trust=True``, else ``UntrustedFileError``), or a Python object
named by its module (``mymod:Ducker``).
"""

from ..game.driver import act_rows, ask
from . import heuristic as _heuristic  # noqa: F401

# Importing the baselines registers them (openspiel-ismcts imports pyspiel only when made).
from . import openspiel_ismcts as _openspiel_ismcts  # noqa: F401
from . import pimc as _pimc  # noqa: F401
from . import pretrained as _pretrained  # noqa: F401
from . import random_agent as _random_agent  # noqa: F401
from .base import Agent
from .registry import (
    AgentSpec,
    UntrustedFileError,
    agent_names,
    agent_takes,
    make_agent,
    parse_agents,
    register,
    register_loader,
)

__all__ = [
    "Agent",
    "AgentSpec",
    "UntrustedFileError",
    "act_rows",
    "agent_takes",
    "ask",
    "agent_names",
    "make_agent",
    "parse_agents",
    "register",
    "register_loader",
]
