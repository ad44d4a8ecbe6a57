"""Barbu v1, the current version of the environment, imported the PettingZoo way.

``from barbu_env import barbu_v1; env = barbu_v1.env(rules="standard")``: ``env`` and
``raw_env`` are ``barbu_env.env`` and ``barbu_env.raw_env`` (documented in
``barbu_env/envs/aec.py``, with the version history); ``raw_env.metadata["name"]`` is
``"barbu_v1"``. The single-agent Gymnasium form is ``gymnasium.make("Barbu-v1")``.

``parallel_env(**kwargs)`` is the same game through PettingZoo's parallel API:
``turn_based_aec_to_parallel(env(**kwargs))`` (``pettingzoo.utils.conversions``), with the
same arguments as ``env``. Barbu is turn-based, so each ``step(actions)`` plays the action
of the one agent to act (the agent whose ``action_mask`` is not all zeros; after the first
step also ``infos[agent]["active_agent"]``) and ignores the others'. ``step`` returns an
observation for every agent and every agent's reward for that step, so an agent's rewards
over an episode sum to its score, as in the AEC env. (PettingZoo's ``aec_to_parallel``
refuses this env, as every turn-based classic game: it is for AEC envs that update once per
cycle.) PettingZoo's ``parallel_api_test`` passes; docs/integrations.md lists which of
PettingZoo's tools need ``illegal_action="random"``.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from .envs.aec import env, raw_env

__all__ = ["env", "parallel_env", "raw_env"]


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """``env(**kwargs)`` through PettingZoo's ``turn_based_aec_to_parallel`` (module docstring)."""
    return turn_based_aec_to_parallel(env(**kwargs))
