"""Agents by name: ``make_agent("heuristic", seed=3)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .base import Agent

#: name -> factory(seed=..., **kwargs) -> Agent
_FACTORIES: dict[str, Callable[..., Agent]] = {}
#: loaders tried, in order, for a spec that is a path: loader(path, seed=..., **kwargs) -> Agent | None
_LOADERS: list[Callable[..., Agent | None]] = []


def register(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Decorator registering an agent factory under ``name``."""

    def deco(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in _FACTORIES:
            raise ValueError(f"an agent named {name!r} is already registered")
        _FACTORIES[name] = factory
        return factory

    return deco


def register_loader(loader: Callable[..., Agent | None]) -> Callable[..., Agent | None]:
    """Register a loader for agents given as a file path (it returns None for files it
    does not handle)."""
    _LOADERS.append(loader)
    return loader


def agent_names() -> list[str]:
    return sorted(_FACTORIES)


def make_agent(spec: str, seed: int = 0, **kwargs: Any) -> Agent:
    """An agent from a registered name or a checkpoint path; ``seed`` makes it deterministic."""
    if spec in _FACTORIES:
        return _FACTORIES[spec](seed=seed, **kwargs)
    if Path(spec).exists():
        for loader in _LOADERS:
            agent = loader(spec, seed=seed, **kwargs)
            if agent is not None:
                return agent
        raise ValueError(f"no loader handles the file {spec!r}")
    raise ValueError(f"unknown agent {spec!r}: registered agents are {agent_names()}, or give a checkpoint path")
