"""Agents by name: ``make_agent("heuristic", seed=3)``, with parameters:
``make_agent("pimc", worlds=32)`` or, as the command line writes them,
``make_agent("pimc:worlds=32,rollout=random")``.

An agent spec is a registered name or a checkpoint path, optionally followed by ``:`` and
``key=value`` parameters separated by commas. Values are read as ints, floats,
``true``/``false``, ``none``, or else kept as text. In a comma-separated list of agents
(``--agents``), a piece containing ``=`` and no ``:`` is a parameter of the agent before
it (``split_agent_specs``), so no quoting is needed beyond the shell's:

>>> split_agent_specs("pimc:worlds=32,rollout=random,heuristic,heuristic,heuristic")
['pimc:worlds=32,rollout=random', 'heuristic', 'heuristic', 'heuristic']
>>> parse_agent_spec("pimc:worlds=32,time_limit=0.5,baseline=false")
('pimc', {'worlds': 32, 'time_limit': 0.5, 'baseline': False})
"""

from __future__ import annotations

import inspect
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


def split_agent_specs(text: str) -> list[str]:
    """A comma-separated list of agent specs, parameters kept with their agent (see the
    module docstring)."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and ":" not in piece and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,..."`` as ``(name, {key: value})``; a spec without parameters, or
    an existing file's path, as ``(spec, {})``."""
    if ":" not in spec or Path(spec).exists():
        return spec, {}
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in (p.strip() for p in rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"agent {spec!r}: parameters are key=value, separated by commas, not {item!r}")
        params[key.strip()] = _value(value.strip())
    return name, params


def _check_params(name: str, factory: Callable[..., Agent], params: dict[str, Any]) -> None:
    """Parameters written in a spec must be named parameters of the agent's factory."""
    named = [
        p.name
        for p in inspect.signature(factory).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in ("seed", "rules")
    ]
    unknown = sorted(set(params) - set(named))
    if unknown:
        takes = ", ".join(named) if named else "no parameters"
        raise ValueError(f"agent {name!r} has no parameter {', '.join(unknown)} (it takes: {takes})")


def make_agent(spec: str, seed: int = 0, **kwargs: Any) -> Agent:
    """An agent from a registered name or a checkpoint path, with parameters written in
    the spec (``"pimc:worlds=32"``) or given as keywords; ``seed`` makes it deterministic."""
    name, params = parse_agent_spec(spec)
    if params:
        if name not in _FACTORIES:
            raise ValueError(f"unknown agent {name!r}: registered agents are {agent_names()}")
        _check_params(name, _FACTORIES[name], params)
        return _FACTORIES[name](seed=seed, **{**kwargs, **params})
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
