"""Trained policies shipped with the package, playable by name: ``make_agent("ppo")``,
``barbu eval --agents ppo,heuristic,heuristic,heuristic``.

Each is a checkpoint of ``barbu train`` in ``barbu_env/agents/pretrained/`` with a model
card beside it (``<name>.md``: the rules it was trained under, the observation layout,
the config and command that trained it, wall time, decisions and its results). Loading
one goes through the checkpoint loaders (``barbu.agent_loaders`` entry points, so torch
is imported only when a shipped policy is asked for: without the ``train`` extra, a
one-line ``barbu_env.util.extras.MissingExtraError``); it plays its most likely legal
action, or samples with ``deterministic=False``; ``device`` (``cpu`` by default) is where
its network computes (``ppo:device=cuda``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..util.extras import require
from .base import Agent
from .registry import make_agent, register

#: Where the shipped checkpoints and their model cards live.
PRETRAINED_DIR = Path(__file__).parent / "pretrained"
#: Shipped policies: registered name -> checkpoint file in PRETRAINED_DIR.
SHIPPED = {
    "ppo": "ppo.pt",
    "ppo-finetuned": "ppo-finetuned.pt",
    "ppo-expert": "ppo-expert.pt",
    "ppo-belief": "ppo-belief.pt",
}


def pretrained_path(name: str) -> Path:
    """The checkpoint file of a shipped policy."""
    return PRETRAINED_DIR / SHIPPED[name]


def checkpoint_path(spec: str) -> Path:
    """The checkpoint file a spec names: a shipped policy's name (``ppo``) or a path."""
    return pretrained_path(spec) if spec in SHIPPED else Path(spec)


def _factory(name: str):
    def make(seed: int = 0, rules: Any = None, deterministic: bool = True, device: str = "cpu") -> Agent:
        require("torch", "train", f"the shipped policy {name!r}")
        agent = make_agent(str(pretrained_path(name)), seed=seed, deterministic=deterministic, device=device)
        agent.name = name
        return agent

    make.__doc__ = f"The shipped policy {name!r} ({SHIPPED[name]}; its model card is {Path(SHIPPED[name]).stem}.md)."
    make.checkpoint = pretrained_path(name)  # type: ignore[attr-defined]  # its weights (AgentSpec.sources)
    return make


for _name in SHIPPED:
    register(_name)(_factory(_name))
