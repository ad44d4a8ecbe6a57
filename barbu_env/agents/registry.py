"""Agents by name: ``make_agent("heuristic", seed=3)``, with parameters:
``make_agent("pimc", worlds=32)`` or, as the command line writes them,
``make_agent("pimc:worlds=32,rollout=random")``.

An agent spec is a registered name or a checkpoint path, optionally followed by ``:`` and
``key=value`` parameters separated by commas. Values are read as ints, floats,
``true``/``false``, ``none``, or else kept as text, and must be of a kind the agent's
factory (or loader) takes, by its annotations or defaults (``check_param_types``). In a comma-separated list of agents
(``--agents``), a piece that starts with a parameter name and ``=`` is a parameter of the
agent before it (``split_agent_specs``), so no quoting is needed beyond the shell's; a
checkpoint's path may hold commas and colons (a Ray Tune trial's folder, a Windows drive)
and still take parameters: the longest start of a spec that is an existing file or folder
is its path (``path_part``):

>>> split_agent_specs("pimc:worlds=32,rollout=random,heuristic,heuristic,heuristic")
['pimc:worlds=32,rollout=random', 'heuristic', 'heuristic', 'heuristic']
>>> split_agent_specs("runs/a/best.pt:deterministic=false,device=cuda:1,random")
['runs/a/best.pt:deterministic=false,device=cuda:1', 'random']
>>> parse_agent_spec("pimc:worlds=32,time_limit=0.5,baseline=false")
('pimc', {'worlds': 32, 'time_limit': 0.5, 'baseline': False})

Files in a pickle-based format (an SB3 ``.zip``, an RLlib checkpoint) run code of their
author's when they are loaded, so their loaders refuse them with ``UntrustedFileError``
unless the caller opts in: ``make_agent(path, trust=True)``, or the spec parameter
``path:trust=true`` (which travels inside the spec string, to tournament workers too).
Torch ``.pt`` checkpoints load with ``weights_only=True`` and need no opt-in; ``trust``
is accepted, and ignored, by every agent (see ``docs/security.md``).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..util.files import cut_text, printable, quote
from .base import Agent

#: name -> factory(seed=..., **kwargs) -> Agent
_FACTORIES: dict[str, Callable[..., Agent]] = {}
#: name -> the agent it plays as: another registered name with other defaults (its spec's
#: parameters -> that name and its parameters), for ``agent_identity``
_PLAYS_AS: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]] = {}
#: loaders tried, in order, for a spec that is a path: loader(path, seed=..., **kwargs) -> Agent | None
_LOADERS: list[Callable[..., Agent | None]] = []


def register(
    name: str, plays_as: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]] | None = None
) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Decorator registering an agent factory under ``name``. ``plays_as``, for a name that
    is another registered agent with other defaults: from a spec's parameters, the name and
    parameters that make the same player (``heuristic-cautious`` is ``heuristic`` with
    higher margins), so that one agent spelt either way is known as one (``agent_identity``)."""

    def deco(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in _FACTORIES:
            raise ValueError(f"an agent named {name!r} is already registered")
        _FACTORIES[name] = factory
        if plays_as is not None:
            _PLAYS_AS[name] = plays_as
        return factory

    return deco


class UntrustedFileError(ValueError):
    """A file in a pickle-based format asked for without the opt-in (``trust=True``, the
    spec parameter ``trust=true``, ``--trust-pickled``): unpickling it would run whatever
    code its author put in it. Loaders raise it after recognising the file by its
    structure, before anything in it is unpickled."""

    def __init__(self, path: str | Path, kind: str):
        self.path, self.kind = str(path), kind
        super().__init__(
            f"{path} is {kind}, a pickle-based format: loading it runs code from the file; "
            f"if you trust where it came from, opt in with make_agent(path, trust=True), the spec "
            f"{path}:trust=true, or --trust-pickled on the command line (docs/security.md)"
        )

    def __reduce__(self):  # rebuilt from its arguments when a tournament worker sends it back
        return type(self), (self.path, self.kind)


def register_loader(loader: Callable[..., Agent | None]) -> Callable[..., Agent | None]:
    """Register a loader for agents given as a file path (it returns None for files it
    does not handle). It is called as ``loader(path, seed=..., trust=..., **params)``: a
    loader of a format whose loading can run code (pickle) raises ``UntrustedFileError``
    when ``trust`` is false, before reading anything but the file's structure."""
    _LOADERS.append(loader)
    return loader


def agent_names() -> list[str]:
    return sorted(_FACTORIES)


#: Entry-point group where installed packages declare loaders (``training`` declares the
#: torch checkpoint loader there), so that no torch is imported until a file is loaded.
LOADER_ENTRY_POINTS = "barbu.agent_loaders"
_entry_points_loaded = False
#: Entry points that failed to import (a plug-in whose own dependencies are missing):
#: name -> why. They do not stop the other loaders; a file no loader handles names them.
_BROKEN_LOADERS: dict[str, str] = {}


def _load_entry_point_loaders() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=LOADER_ENTRY_POINTS):
        try:
            loader = ep.load()
        except ImportError as e:
            _BROKEN_LOADERS[ep.name] = f"{ep.value} ({e})"
            continue
        if loader not in _LOADERS:
            _LOADERS.append(loader)


#: A piece of an agent list that is a parameter: a name, then ``=`` (``device=cuda:1``).
_PARAMETER = re.compile(r"\w+\s*=")


def split_agent_specs(text: str) -> list[str]:
    """A comma-separated list of agent specs, parameters kept with their agent, and the
    pieces of an existing path that holds commas kept together, whether the path is an
    agent or a parameter's value (see the module docstring). ValueError for a list of over
    ``MAX_AGENTS_TEXT`` characters."""
    if len(text) > MAX_AGENTS_TEXT:
        raise ValueError(f"a list of agents is at most {MAX_AGENTS_TEXT:,} characters, not {len(text):,}")
    pieces = text.split(",")
    specs: list[str] = []
    for i, raw in enumerate(pieces):
        piece = raw.strip()
        if not piece:
            continue
        parameter = _PARAMETER.match(piece) and not _starts_path([piece, *pieces[i + 1 : i + PATH_PIECES]])
        if specs and (parameter or _continues_path(specs[-1], raw)):
            specs[-1] += "," + (piece if parameter else raw.rstrip())
        else:
            specs.append(piece)
    return specs


#: The longest list of agents read (``--agents``): far more than any league needs.
MAX_AGENTS_TEXT = 8_192
#: The most commas, colons and ``=`` one path is looked for across (a bound on the work).
PATH_PIECES = 8


def is_path(text: str) -> bool:
    """Whether ``text`` names an existing file or folder (False for a name no file can
    have: too long, a NUL byte)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def path_part(spec: str) -> str:
    """The longest start of ``spec`` that is an existing file or folder and ends where
    ``spec`` ends or at a ``:``; ``""`` if none. So a path may hold colons and commas and
    still take parameters (``C:\\runs\\best.pt:device=cpu``)."""
    if len(spec) <= PATH_MAX and is_path(spec):
        return spec
    colons = [i for i, ch in enumerate(spec[: PATH_MAX + 1]) if ch == ":"]
    for i in reversed(colons[-PATH_PIECES:]):
        if is_path(spec[:i]):
            return spec[:i]
    return ""


#: The longest path looked for (Linux's PATH_MAX).
PATH_MAX = 4096


def _continues_path(before: str, piece: str) -> bool:
    """Whether ``piece``, after a comma, continues an existing path that begins in
    ``before`` (at its start, or after one of its last ``:``, ``,`` or ``=``)."""
    starts, i = [], len(before)
    while len(starts) < PATH_PIECES and i > 0:
        i = max(before.rfind(":", 0, i), before.rfind(",", 0, i), before.rfind("=", 0, i))
        if i < 0:
            break
        starts.append(i + 1)
    starts += [0] if len(before) <= PATH_MAX else []
    return any(len(path_part(before[s:] + "," + piece)) > len(before) - s for s in starts)


def _starts_path(pieces: list[str]) -> bool:
    """Whether ``pieces[0]`` begins an existing path (alone, or joined by commas to the
    pieces after it), though it looks like a parameter (a folder ``lr=3e-4,seed=1``)."""
    return any(len(path_part(",".join(pieces[:j]))) > len(",".join(pieces[: j - 1])) for j in range(len(pieces), 0, -1))


def _parameter_items(rest: str) -> list[str]:
    """A spec's parameters' text as its ``key=value`` items, a value that is a path
    holding commas kept whole."""
    items: list[str] = []
    for item in rest.split(","):
        if items and _continues_path(items[-1].partition("=")[2], item):
            items[-1] += "," + item
        else:
            items.append(item)
    return items


def spec_parts(spec: str) -> tuple[str, str | None]:
    """``spec``'s agent (a registered name, or a path: ``path_part``) and the text of its
    parameters after the ``:`` (None without one)."""
    path = path_part(spec) or spec.partition(":")[0]
    return path, (spec[len(path) + 1 :] if len(spec) > len(path) else None)


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value
    return text


#: Keywords every factory takes that a spec may not set: the caller's (``make_agent``'s
#: ``seed``, the table's ``rules``).
_NOT_IN_SPECS = {
    "seed": "make_agent's seed, which a tournament or a table draws for each agent",
    "rules": "every agent plays under the table's rules",
}


def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,..."`` as ``(name, {key: value})``; a spec without parameters, or
    an existing file's path, as ``(spec, {})``. A key given twice, ``seed`` or ``rules`` is
    a ValueError."""
    name, rest = spec_parts(spec)
    if rest is None:
        return name, {}
    params: dict[str, Any] = {}
    for item in (p.strip() for p in _parameter_items(rest)):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"agent {quote(spec, 120)}: parameters are key=value, separated by commas, not {quote(item)}"
            )
        if key.strip() in params:
            raise ValueError(f"agent {quote(spec, 120)}: parameter {printable(key.strip())} is given twice")
        if key.strip() in _NOT_IN_SPECS:
            why = _NOT_IN_SPECS[key.strip()]
            raise ValueError(f"agent {quote(spec, 120)}: {key.strip()} is not a parameter a spec sets ({why})")
        try:
            params[key.strip()] = _value(value.strip())
        except ValueError as e:
            raise ValueError(f"agent {quote(spec, 120)}: parameter {cut_text(key.strip(), 60)} takes {e}") from None
    return name, params


def _check_params(name: str, factory: Callable[..., Agent], params: dict[str, Any]) -> None:
    """Parameters written in a spec must be named parameters of the agent's factory, of
    the kinds it takes (``check_param_types``)."""
    _check_names(name, factory, params)
    check_param_types(f"agent {quote(name)}", factory, params)


def _check_names(name: str, factory: Callable[..., Agent], params: Mapping[str, Any]) -> None:
    """Every key of ``params`` must be a named parameter of the agent's factory (``seed``
    and ``rules`` aside), else a one-line ValueError naming what it takes."""
    named = [
        p.name
        for p in inspect.signature(factory).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in ("seed", "rules")
    ]
    unknown = sorted(set(params) - set(named) - {"seed", "rules"})
    if unknown:
        takes = ", ".join(named) if named else "no parameters"
        shown = cut_text(printable(", ".join(unknown[:20])), 120)
        raise ValueError(f"agent {quote(name)} has no parameter {shown} (it takes: {takes})")


#: The kinds of value a spec can hold (what ``_value`` reads), by the names annotations use.
_KINDS: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "None": (type(None),),
}
_KIND_WORDS = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "text", "None": "none"}


def _param_kinds(param: inspect.Parameter) -> list[str] | None:
    """The kinds (keys of ``_KINDS``) a parameter takes, from its annotation (``"float |
    None"``), else from its default's type; None when neither says (anything goes)."""
    annotation = param.annotation
    if isinstance(annotation, type) and annotation is not inspect.Parameter.empty:
        annotation = annotation.__name__
    if isinstance(annotation, str):
        kinds = [k.strip() for k in annotation.split("|")]
        if all(k in _KINDS for k in kinds):
            return kinds
        return None
    default = param.default
    if default is inspect.Parameter.empty or default is None:
        return None
    kind = type(default).__name__
    return [kind] if kind in _KINDS else None


def check_param_types(owner: str, func: Callable[..., Any], params: dict[str, Any]) -> None:
    """Each of ``params`` that ``func`` names must be of a kind its annotation (or its
    default) allows: ``deterministic=maybe`` for a ``deterministic: bool`` is a
    ValueError naming the parameter and what it takes. An int is a float too; a text
    parameter given a number (``device=0``) is refused, as a number is not what the spec
    meant to be read as. Parameters ``func`` does not name are left to its own checks."""
    signature = inspect.signature(func).parameters
    for key, value in params.items():
        param = signature.get(key)
        if param is None or param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            continue
        kinds = _param_kinds(param)
        if kinds is None:
            continue
        ok = any(
            isinstance(value, _KINDS[k]) and not (isinstance(value, bool) and k in ("int", "float")) for k in kinds
        )
        if not ok:
            takes = " or ".join(_KIND_WORDS[k] for k in kinds)
            raise ValueError(f"{owner}: parameter {key} takes {takes}, not {quote(value)}")


@functools.cache
def _takes_trust(factory: Callable[..., Agent]) -> bool:
    """Whether a registered factory takes ``trust`` (read once: environments make agents per game)."""
    return "trust" in inspect.signature(factory).parameters


def make_agent(spec: str, seed: int = 0, trust: bool = False, **kwargs: Any) -> Agent:
    """An agent from a registered name or a checkpoint path, with parameters written in
    the spec (``"pimc:worlds=32"``, ``"runs/x/best.pt:device=cuda"``) or given as keywords
    (the spec's win); ``seed`` makes it deterministic. A file's parameters go to its
    loader, which checks them. ``trust`` (or the spec's ``trust=true``) allows loading a
    pickle-based file, which can run code (else ``UntrustedFileError``); registered agents
    ignore it unless their factory takes it."""
    name, params = parse_agent_spec(spec)
    trust = params.pop("trust", trust)
    if not isinstance(trust, bool):
        raise ValueError(f"agent {quote(spec, 120)}: trust is true or false, not {trust!r}")
    if name in _FACTORIES:
        factory = _FACTORIES[name]
        if params:
            _check_params(name, factory, params)
        if kwargs:
            _check_names(name, factory, kwargs)  # a misspelt keyword is refused, not ignored
        if _takes_trust(factory):
            params["trust"] = trust
        return factory(seed=seed, **{**kwargs, **params})
    if is_path(name):
        _load_entry_point_loaders()
        for loader in _LOADERS:
            agent = loader(name, seed=seed, trust=trust, **{**kwargs, **params})
            if agent is not None:
                return agent
        broken = "; ".join(f"{k}: {v}" for k, v in _BROKEN_LOADERS.items())
        raise ValueError(
            f"no loader handles the file {quote(name, 200)}"
            + (f" (loaders that failed to import: {broken})" if broken else "")
        )
    raise unknown_agent(name, spec)


def unknown_agent(name: str, spec: str) -> ValueError:
    """The refusal of ``spec``, whose agent ``name`` is neither registered nor an existing
    file: ``no agent file`` where the name looks like a file's (a folder separator, or a dot
    in its last part), else ``unknown agent``; one line."""
    if os.sep in name or "/" in name or "." in Path(name).name:  # meant as a file
        return ValueError(f"no agent file {quote(name, 120)}: no such file (registered agents are {agent_names()})")
    known = agent_names()
    return ValueError(f"unknown agent {quote(spec, 120)}: registered agents are {known}, or give a checkpoint path")


def agent_takes(spec: str, key: str) -> bool:
    """Whether the agent a spec names takes the parameter ``key``: a registered agent whose
    factory names it, or a file (its loader receives every parameter: a trained checkpoint
    takes ``device`` and ``deterministic``)."""
    name, _ = parse_agent_spec(spec)
    if name in _FACTORIES:
        return key in inspect.signature(_FACTORIES[name]).parameters
    return is_path(name)


#: Spec parameters that change where or whether an agent loads, never how it plays.
_NOT_PLAY = ("trust", "device")
#: What every checkpoint loader takes by default (``deterministic=true`` written out is the same agent).
_FILE_DEFAULTS = {"deterministic": True}
#: Spec parameters whose value is itself an agent (``pimc:rollout=ppo``), or a belief network
#: (``worlds_from=belief``, or its checkpoint's path): compared as what they name.
AGENT_VALUED = ("rollout", "prior")
BELIEF_VALUED = ("worlds_from",)
#: How deep agents named in parameters may nest (``pimc:rollout=pimc:rollout=...``).
MAX_NESTING = 4


def agent_identity(spec: str) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    """What ``spec`` plays as, whatever its spelling: a registered name, or a file (one
    file however it is reached: another spelling, a symbolic or hard link; a shipped
    policy's name is its checkpoint file), and its parameters in key order, read as
    ``make_agent`` reads them (a whole number and the same number with a point are one
    value), less those its factory or the checkpoint loaders set to the same value by
    default and those that change only where it computes or whether it may load
    (``device``, ``trust``). Two specs with one identity make the same agent (``pimc``,
    ``pimc:worlds=32``, ``pimc:worlds=032``; ``heuristic-cautious`` and ``heuristic`` with
    its margins, see ``register``). An agent or a belief network named in a
    parameter (``rollout=ppo``, ``worlds_from=belief``) is compared as what it names: a
    shipped name is its file.

    >>> agent_identity("pimc:rollout=heuristic,worlds=08") == agent_identity("pimc:worlds=8")
    True
    """
    try:
        return _identity(spec, 0)
    except _TooDeep:
        raise ValueError(
            f"agent spec {quote(spec, 80)}: agents named in parameters nest at most {MAX_NESTING} deep"
        ) from None


class _TooDeep(Exception):
    """Agents named in parameters nested deeper than ``MAX_NESTING``."""


def _identity(spec: str, depth: int) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    if depth > MAX_NESTING:
        raise _TooDeep
    name, params = parse_agent_spec(spec)
    if name in _PLAYS_AS:
        name, params = _PLAYS_AS[name](params)
    params = {k: _named(k, v, depth) for k, v in params.items() if k not in _NOT_PLAY}
    factory = _FACTORIES.get(name)
    if factory is not None:
        signature = inspect.signature(factory).parameters
        defaults = {k: p.default for k, p in signature.items() if p.default is not inspect.Parameter.empty}
        checkpoint = getattr(factory, "checkpoint", None)  # a shipped policy: its file
        agent: tuple[Any, ...] = ("name", name) if checkpoint is None else _file_identity(checkpoint)
    else:
        defaults, agent = _FILE_DEFAULTS, _file_identity(name)
    kept = {k: v for k, v in params.items() if not (k in defaults and _same(_named(k, defaults[k], depth), v))}
    return agent, tuple(sorted((k, _canonical(v)) for k, v in kept.items()))


def _named(key: str, value: Any, depth: int) -> Any:
    """A parameter's value as what it names, where it names an agent or a belief network
    (a file as one thing however it is reached); any other value as it is."""
    if not isinstance(value, str):
        return value
    if key in AGENT_VALUED:
        return _identity(value, depth + 1)
    if key in BELIEF_VALUED:
        from .belief import UNIFORM, model_path

        return value if value == UNIFORM else _file_identity(model_path(value))
    return value


def _same(default: Any, value: Any) -> bool:
    """Whether a spec's value is a parameter's default (``1`` is not ``True``)."""
    kinds_match = type(default) is type(value) or (type(default) is float and type(value) is int)
    return kinds_match and default == value


def _file_identity(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    """A file as one thing however it is reached: its device and inode, else its real path."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return ("path", os.path.realpath(path))
    return ("file", st.st_dev, st.st_ino)


def _canonical(value: Any) -> Any:
    """A spec value as one text for all its spellings: a whole number as a float (``1`` is
    ``1.0``, where it fits one), true and false as words; what a parameter names (a
    tuple) as it is."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return repr(float(value))
        except OverflowError:
            return repr(value)
    return repr(value)


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


def spec_without(spec: str, key: str) -> str:
    """``spec`` without its parameter ``key`` (the spec itself if it has none).

    >>> spec_without("runs/a/model.zip:trust=true", "trust"), spec_without("pimc:trust=true,worlds=8", "trust")
    ('runs/a/model.zip', 'pimc:worlds=8')
    """
    name, rest = spec_parts(spec)
    if rest is None:
        return spec
    kept = [piece for piece in _parameter_items(rest) if piece.partition("=")[0].strip() != key]
    return f"{name}:{','.join(kept)}" if kept else name
