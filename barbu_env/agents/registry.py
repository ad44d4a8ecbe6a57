"""Agents by name: ``make_agent("heuristic", seed=3)``, with parameters:
``make_agent("pimc", worlds=32)`` or, as the command line writes them,
``make_agent("pimc:worlds=32,rollout=random")``.

An agent spec is a registered name or a checkpoint path, optionally followed by ``:`` and
``key=value`` parameters separated by commas. Values are read as ints, floats,
``true``/``false``, ``none``, or else kept as text. In a comma-separated list of agents
(``--agents``), a piece that starts with a parameter name and ``=`` is a parameter of the
agent before it (``split_agent_specs``), so no quoting is needed beyond the shell's:

>>> split_agent_specs("pimc:worlds=32,rollout=random,heuristic,heuristic,heuristic")
['pimc:worlds=32,rollout=random', 'heuristic', 'heuristic', 'heuristic']
>>> split_agent_specs("runs/a/best.pt:deterministic=false,device=cuda:1,random")
['runs/a/best.pt:deterministic=false,device=cuda:1', 'random']
>>> parse_agent_spec("pimc:worlds=32,time_limit=0.5,baseline=false")
('pimc', {'worlds': 32, 'time_limit': 0.5, 'baseline': False})
"""

from __future__ import annotations

import inspect
import re
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


#: A piece of an agent list that is a parameter: a name, then ``=`` (``device=cuda:1``).
_PARAMETER = re.compile(r"\w+\s*=")


def split_agent_specs(text: str) -> list[str]:
    """A comma-separated list of agent specs, parameters kept with their agent (see the
    module docstring)."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if _PARAMETER.match(piece) and specs:
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
    the spec (``"pimc:worlds=32"``, ``"runs/x/best.pt:device=cuda"``) or given as keywords
    (the spec's win); ``seed`` makes it deterministic. A file's parameters go to its
    loader, which checks them."""
    name, params = parse_agent_spec(spec)
    if name in _FACTORIES:
        if params:
            _check_params(name, _FACTORIES[name], params)
        return _FACTORIES[name](seed=seed, **{**kwargs, **params})
    if Path(name).exists():
        _load_entry_point_loaders()
        for loader in _LOADERS:
            agent = loader(name, seed=seed, **{**kwargs, **params})
            if agent is not None:
                return agent
        raise ValueError(f"no loader handles the file {name!r}")
    if params:
        raise ValueError(f"unknown agent {name!r}: registered agents are {agent_names()}, or give a checkpoint path")
    raise ValueError(f"unknown agent {spec!r}: registered agents are {agent_names()}, or give a checkpoint path")


def agent_takes(spec: str, key: str) -> bool:
    """Whether the agent a spec names takes the parameter ``key``: a registered agent whose
    factory names it, or a file (its loader receives every parameter: a trained checkpoint
    takes ``device`` and ``deterministic``)."""
    name, _ = parse_agent_spec(spec)
    if name in _FACTORIES:
        return key in inspect.signature(_FACTORIES[name]).parameters
    return Path(name).exists()


def spec_with(spec: str, key: str, value: Any) -> str:
    """``spec`` with the parameter ``key=value`` added, unless the spec already sets it
    (what the spec says wins).

    >>> spec_with("runs/a/best.pt", "device", "cuda"), spec_with("pimc:worlds=8", "worlds", 4)
    ('runs/a/best.pt:device=cuda', 'pimc:worlds=8')
    """
    name, params = parse_agent_spec(spec)
    if key in params:
        return spec
    if isinstance(value, bool) or value is None:
        value = str(value).lower()  # as _value reads it back
    return f"{spec}{',' if params else ':'}{key}={value}"
