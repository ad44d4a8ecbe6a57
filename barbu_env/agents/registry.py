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


#: Entry-point group where installed packages declare loaders (``training`` declares the
#: torch checkpoint loader there), so that no torch is imported until a file is loaded.
LOADER_ENTRY_POINTS = "barbu.agent_loaders"
_entry_points_loaded = False


def _load_entry_point_loaders() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=LOADER_ENTRY_POINTS):
        loader = ep.load()
        if loader not in _LOADERS:
            _LOADERS.append(loader)


def make_agent(spec: str, seed: int = 0, **kwargs: Any) -> Agent:
    """An agent from a registered name or a checkpoint path; ``seed`` makes it deterministic."""
    if spec in _FACTORIES:
        return _FACTORIES[spec](seed=seed, **kwargs)
    if Path(spec).exists():
        _load_entry_point_loaders()
        for loader in _LOADERS:
            agent = loader(spec, seed=seed, **kwargs)
            if agent is not None:
                return agent
        raise ValueError(f"no loader handles the file {spec!r}")
    raise ValueError(f"unknown agent {spec!r}: registered agents are {agent_names()}, or give a checkpoint path")
