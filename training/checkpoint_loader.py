"""The torch checkpoint loader as the agent registry sees it: ``load_checkpoint_agent`` is
declared under the ``barbu.agent_loaders`` entry point (``pyproject.toml``) and imports
nothing heavy, so that the registry can load it in a core install, without torch.

For a ``.pt`` file it imports torch, through ``barbu_env.util.extras.require`` (without the
``train`` extra: a ``MissingExtraError`` naming it), and hands the file to
``barbu_training.policy_agent.load_policy_agent``; for any other path it returns None, so that
the other loaders are asked, with or without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from barbu_env.util.extras import require


def load_checkpoint_agent(path: str | Path, seed: int = 0, **kwargs: Any):
    """``barbu_training.policy_agent.load_policy_agent(path, seed, **kwargs)`` for a ``.pt``
    file (its parameters: ``deterministic``, ``device``); None for other paths."""
    if Path(path).suffix != ".pt":
        return None
    require("torch", "train", f"the torch checkpoint {Path(path).name}")
    from barbu_env.agents.registry import check_param_types
    from barbu_training.policy_agent import load_policy_agent

    check_param_types(f"checkpoint agent {Path(path).name}", load_policy_agent, kwargs)  # deterministic=maybe
    return load_policy_agent(path, seed=seed, **kwargs)
