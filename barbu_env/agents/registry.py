"""Agents by spec: ``make_agent("heuristic", seed=3)``, ``make_agent("pimc", worlds=32)``,
or as the command line writes them, ``make_agent("pimc:worlds=32,rollout=random")``. A
spec is parsed once, where it comes in: ``AgentSpec.parse("pimc:worlds=32,rollout=random")``.

A spec is an agent's name, then optionally ``:`` and ``key=value`` parameters separated
by commas. The name is a registered agent (``pimc``), a file (``runs/a/best.pt``: a
checkpoint, an SB3 ``.zip``, an RLlib folder) or a Python object named by its module
(``mymod:Ducker``: a factory or an ``Agent`` class, imported from the working folder or
the installed path). The parameters start at the first ``:`` followed by ``word=``, so a
name may hold colons (``C:\\runs\\best.pt:device=cpu``, ``mymod:Ducker:margin=3``). Values
are read as ``true``/``false``, ``none``, an int, a float, or else kept as text (an agent
named in a parameter, ``rollout=ppo``, is text). In a list of agents (``--agents``), a
piece that starts with ``word=`` is a parameter of the agent before it.

>>> AgentSpec.parse("pimc:worlds=32,rollout=random")
AgentSpec('pimc:worlds=32,rollout=random')
>>> [str(s) for s in parse_agents("pimc:worlds=32,rollout=random,heuristic,runs/a/best.pt:device=cuda:1")]
['pimc:worlds=32,rollout=random', 'heuristic', 'runs/a/best.pt:device=cuda:1']
>>> AgentSpec.parse("pimc:worlds=8,rollout=heuristic").identity
'pimc:worlds=8'

A spec is a value: equal specs (the same name and parameters, however written) make the
same agent. ``identity`` is its canonical text less what does not change how it plays
(``trust``, ``device``, parameters given their default): one agent spelt two ways has one
identity. ``sources`` lists the files whose bytes decide how it plays: the checkpoints it
names, and the source of the Python code that makes it; a league keys its cache on both.
A bad spec is refused in one line where it is parsed (a piece that is not ``key=value``,
a key given twice, ``seed`` or ``rules``, which its caller gives).

A registered agent's parameters must be named parameters of its factory, of the kinds its
annotations (or defaults) say (``check_param_types``): a typo is refused in one line
naming what it takes. A file goes to the loaders (``register_loader``; installed packages
add theirs under the entry-point group ``barbu.agent_loaders``), which check their own.
An object named by its module is imported (the user's own code: no sandbox) and called
with ``seed``, ``rules`` where it takes them, and the spec's parameters.

Files in a pickle-based format (an SB3 ``.zip``, an RLlib checkpoint) run code of their
author's when they are loaded, so their loaders refuse them with ``UntrustedFileError``
unless the caller opts in: ``make_agent(path, trust=True)``, or the spec parameter
``path:trust=true`` (which travels inside the spec, to tournament workers too).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Agent

#: name -> factory(seed=..., rules=..., **params) -> Agent
_FACTORIES: dict[str, Callable[..., Agent]] = {}
#: loaders tried, in order, for a spec that is a file: loader(path, seed=..., trust=..., **params) -> Agent | None
_LOADERS: list[Callable[..., Agent | None]] = []
#: Entry-point group where installed packages declare loaders (``barbu_training`` declares the
#: torch checkpoint and SB3/RLlib loaders there), so that no torch is imported until a file is loaded.
LOADER_ENTRY_POINTS = "barbu.agent_loaders"
_entry_points_loaded = False
#: Loader plug-ins that failed to import, and why: a file no loader handles names them.
_BROKEN_LOADERS: list[str] = []
#: A Python object named by its module: ``package.module:attribute``.
_OBJECT = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def register(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Decorator registering an agent factory under ``name``."""

    def deco(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in _FACTORIES:
            raise ValueError(f"an agent named {name!r} is already registered")
        _FACTORIES[name] = factory
        return factory

    return deco


def register_loader(loader: Callable[..., Agent | None]) -> Callable[..., Agent | None]:
    """Register a loader for agents given as a file (it returns None for files it does not
    handle). A loader of a format whose loading can run code (pickle) raises
    ``UntrustedFileError`` when ``trust`` is false, before unpickling anything."""
    _LOADERS.append(loader)
    return loader


class UntrustedFileError(ValueError):
    """A file in a pickle-based format asked for without the opt-in (``trust=True``, the
    spec parameter ``trust=true``, ``--trust-pickled``)."""

    def __init__(self, path: str | Path, kind: str):
        self.path, self.kind = str(path), kind
        super().__init__(
            f"{path} is {kind}, a pickle-based format: loading it runs code from the file; "
            f"if you trust where it came from, opt in with make_agent(path, trust=True), the spec "
            f"{path}:trust=true, or --trust-pickled on the command line (docs/security.md)"
        )

    def __reduce__(self):  # rebuilt from its arguments when a tournament worker sends it back
        return type(self), (self.path, self.kind)


def agent_names() -> list[str]:
    return sorted(_FACTORIES)


def _loaders() -> list[Callable[..., Agent | None]]:
    global _entry_points_loaded
    if not _entry_points_loaded:
        from importlib.metadata import entry_points

        _entry_points_loaded = True
        for ep in entry_points(group=LOADER_ENTRY_POINTS):
            try:
                loader = ep.load()
            except ImportError as e:  # a plug-in whose own dependencies are missing: the others still load
                _BROKEN_LOADERS.append(f"{ep.name}: {ep.value} ({e})")
                continue
            if loader not in _LOADERS:
                _LOADERS.append(loader)
    return _LOADERS


def factory_of(name: str) -> Callable[..., Agent] | None:
    """The code that makes the agent ``name``: a registered factory, or the object a
    ``module:attribute`` name imports (``ValueError`` naming the module if it fails to
    import); None for anything else (a file)."""
    if name in _FACTORIES:
        return _FACTORIES[name]
    module, _, attribute = name.partition(":")
    if module in _FACTORIES:
        raise ValueError(f"agent {name!r}: parameters are key=value, separated by commas, not {attribute!r}")
    if not _OBJECT.fullmatch(name) or Path(name).exists():
        return None
    if "" not in sys.path:
        sys.path.insert(0, "")  # the working folder, as `python -m` has it
    try:
        found: Any = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"agent {name!r}: cannot import {module} ({e})") from e
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise ValueError(f"agent {name!r}: {module} has no agent factory or class {attribute}")
    return found


#: The kinds of value a spec holds, by the names annotations use.
_KINDS: dict[str, tuple[type, ...]] = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}
_KINDS["None"] = (type(None),)
_KIND_WORDS = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "text", "None": "none"}


def _named(func: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return {
        k: p
        for k, p in inspect.signature(func).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and k not in ("seed", "rules")
    }


def check_param_types(owner: str, func: Callable[..., Any], params: dict[str, Any]) -> None:
    """Each of ``params`` that ``func`` names must be of a kind its annotation (or default)
    allows: ``deterministic=maybe`` for a ``deterministic: bool`` is a one-line
    ``ValueError``. An int is a float too; parameters without either are not checked."""
    named = _named(func)
    for key, value in params.items():
        param = named.get(key)
        if param is None:
            continue
        annotation = param.annotation
        if isinstance(annotation, type):
            annotation = annotation.__name__
        if isinstance(annotation, str):
            kinds = [k.strip() for k in annotation.split("|")]
        elif param.default is not inspect.Parameter.empty and param.default is not None:
            kinds = [type(param.default).__name__]
        else:
            continue
        if not all(k in _KINDS for k in kinds):
            continue
        if not any(isinstance(value, _KINDS[k]) and not (isinstance(value, bool) and k != "bool") for k in kinds):
            takes = " or ".join(_KIND_WORDS[k] for k in kinds)
            raise ValueError(f"{owner}: parameter {key} takes {takes}, not {value!r}")


#: The start of a spec's parameters: ``:`` then ``word=``.
_PARAMS = re.compile(r":(?=\s*\w+\s*=)")
#: A piece of an agent list that is a parameter of the agent before it.
_PARAMETER = re.compile(r"\s*\w+\s*=")
#: Keywords every factory takes that its caller gives, never a spec.
_CALLERS = {"seed": "the tournament or table draws each agent's seed", "rules": "every agent plays the table's rules"}
#: Parameters that change where or whether an agent loads, never how it plays.
NOT_PLAY = ("trust", "device")


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


def _same(default: Any, value: Any) -> bool:
    """Whether a spec's value is a parameter's default (``1`` is not ``True``; ``1`` is ``1.0``)."""
    kinds = type(default) is type(value) or (type(default) is float and type(value) is int)
    return kinds and default == value


def _text(value: Any) -> str:
    """A value as a spec writes it, so that ``_value`` reads it back."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 1.0 is 1
    return str(value)


@dataclass(frozen=True)
class AgentSpec:
    """An agent's name and its parameters (in key order); ``text`` is how it was written
    (the label tables show). Two specs are equal when their name and parameters are."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str | AgentSpec) -> AgentSpec:
        """The spec ``text`` says (an ``AgentSpec`` is returned as it is); ``ValueError`` in one line."""
        if isinstance(text, AgentSpec):
            return text
        text = text.strip()
        found = _PARAMS.search(text)
        name, rest = (text[: found.start()], text[found.end() :]) if found else (text, "")
        params: dict[str, Any] = {}
        for item in filter(None, (piece.strip() for piece in rest.split(","))):
            key, eq, value = (part.strip() for part in item.partition("="))
            if not eq or not key:
                raise ValueError(f"agent {text!r}: parameters are key=value, separated by commas, not {item!r}")
            if key in params:
                raise ValueError(f"agent {text!r}: parameter {key} is given twice")
            if key in _CALLERS:
                raise ValueError(f"agent {text!r}: {key} is not a parameter a spec sets ({_CALLERS[key]})")
            params[key] = _value(value)
        if not name:
            raise ValueError(f"agent {text!r}: no agent named")
        return cls(name, tuple(sorted(params.items())), text)

    def __str__(self) -> str:
        return self.text or self.canonical

    def __repr__(self) -> str:
        return f"AgentSpec({str(self)!r})"

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def canonical(self) -> str:
        """The spec as one text for all its spellings: parameters in key order."""
        return self.name + (":" + ",".join(f"{k}={_text(v)}" for k, v in self.params) if self.params else "")

    def get(self, key: str, default: Any = None) -> Any:
        return self.kwargs.get(key, default)

    def with_param(self, key: str, value: Any) -> AgentSpec:
        """This spec with ``key=value`` added, unless it sets ``key`` itself (the spec wins)."""
        if key in self.kwargs:
            return self
        text = f"{self}{',' if self.params else ':'}{key}={_text(value)}"
        return AgentSpec(self.name, tuple(sorted({**self.kwargs, key: value}.items())), text)

    def without(self, *keys: str) -> AgentSpec:
        """This spec without the parameters ``keys``."""
        kept = tuple((k, v) for k, v in self.params if k not in keys)
        return AgentSpec(self.name, kept, AgentSpec(self.name, kept).canonical if kept != self.params else self.text)

    @property
    def factory(self) -> Any:
        """The Python code that makes this agent (a registered factory, or an object named by
        its module); None for a file, whose loader decides."""
        return factory_of(self.name)

    @property
    def identity(self) -> str:
        """What this spec plays as: its canonical text less ``trust``, ``device`` and
        parameters given their factory's default (``deterministic=true`` for a file).

        >>> AgentSpec.parse("pimc:worlds=32,device=cpu").identity == AgentSpec.parse("pimc").identity
        True
        """
        factory = self.factory
        if factory is not None:
            defaults = {k: p.default for k, p in inspect.signature(factory).parameters.items()}
        else:
            defaults = {"deterministic": True}
        kept = tuple(
            (k, v) for k, v in self.params if k not in NOT_PLAY and not (k in defaults and _same(defaults[k], v))
        )
        return AgentSpec(self.name, kept).canonical

    def sources(self) -> list[Path]:
        """The files whose bytes decide how this agent plays: a file it is or names (a
        checkpoint, a shipped policy's, a belief network's), and the source of the Python code
        that makes it or an agent it names (``rollout=``, ``prior=``)."""
        found: list[Path] = []
        factory = self.factory
        if factory is None:
            found.append(Path(self.name))
        else:
            found += _code_files(factory) + ([Path(factory.checkpoint)] if hasattr(factory, "checkpoint") else [])
        for key, value in self.params:
            if not isinstance(value, str) or key in NOT_PLAY:
                continue
            if key == "worlds_from":
                from .belief import UNIFORM, model_path

                found += [] if value == UNIFORM else [model_path(value)]
            elif Path(value).exists():
                found.append(Path(value))
            else:
                try:
                    named = AgentSpec.parse(value)
                except ValueError:
                    continue
                found += named.sources() if named.factory is not None else []
        return list(dict.fromkeys(found))


def _code_files(factory: Any) -> list[Path]:
    """The source files of the code that makes an agent: for barbu's own, the factory's
    module; for a user's, every module loaded from the folder its module lives in (its
    helpers too), the package's folder for a module in a package."""
    source = Path(inspect.getsourcefile(factory) or "").resolve()
    if source.is_relative_to(Path(__file__).resolve().parent.parent):
        return [source]
    top = sys.modules[factory.__module__.partition(".")[0]]
    root = Path(top.__file__).resolve().parent
    files = (Path(getattr(m, "__file__", None) or "") for m in list(sys.modules.values()))
    loaded = (f.resolve() for f in files if f.is_absolute())
    mine = {f for f in loaded if f.suffix == ".py" and f.is_relative_to(root) and "site-packages" not in f.parts}
    return sorted({source} | mine)


def parse_agents(text: str) -> list[AgentSpec]:
    """A comma-separated list of agents, each with its parameters (see the module docstring)."""
    specs: list[str] = []
    for piece in filter(str.strip, text.split(",")):
        if specs and _PARAMETER.match(piece):
            specs[-1] += "," + piece.strip()
        else:
            specs.append(piece.strip())
    return [AgentSpec.parse(s) for s in specs]


def specs_of(agents: Any) -> list[AgentSpec]:
    """Agents given as a list of specs (texts or ``AgentSpec``) or as one comma-separated text."""
    return parse_agents(agents) if isinstance(agents, str) else [AgentSpec.parse(a) for a in agents]


def make_agent(spec: str | AgentSpec, seed: int = 0, trust: bool = False, **kwargs: Any) -> Agent:
    """The agent ``spec`` names, with its parameters (the spec's win over ``kwargs``);
    ``seed`` makes it deterministic. ``trust`` (or the spec's ``trust=true``) allows loading
    a pickle-based file, which can run code (else ``UntrustedFileError``)."""
    spec = AgentSpec.parse(spec)
    params = spec.kwargs
    trust = params.pop("trust", trust)
    if not isinstance(trust, bool):
        raise ValueError(f"agent {str(spec)!r}: trust is true or false, not {trust!r}")
    factory = spec.factory
    if factory is not None:
        accepted = inspect.signature(factory).parameters
        named = _named(factory)
        unknown = sorted({**kwargs, **params}.keys() - named.keys() - {"rules"})
        if unknown:
            takes = ", ".join(named) or "no parameters"
            raise ValueError(f"agent {spec.name!r} has no parameter {', '.join(unknown)} (it takes: {takes})")
        check_param_types(f"agent {spec.name!r}", factory, params)
        given = {"seed": seed, **kwargs, **params, "trust": trust}
        takes_any = any(p.kind == p.VAR_KEYWORD for p in accepted.values())
        given = {k: v for k, v in given.items() if k in accepted or (takes_any and k != "trust")}
        if spec.name in _FACTORIES:
            return factory(**given)
        try:  # a user's own code: its refusal named by its spec
            return factory(**given)
        except (ValueError, TypeError) as e:
            raise ValueError(f"agent {str(spec)!r}: {e}") from e
    if Path(spec.name).exists():
        for loader in _loaders():
            agent = loader(spec.name, seed=seed, trust=trust, **{**kwargs, **params})
            if agent is not None:
                return agent
        broken = f" (loaders that failed to import: {'; '.join(_BROKEN_LOADERS)})" if _BROKEN_LOADERS else ""
        raise ValueError(f"no loader handles the file {spec.name!r}{broken}")
    if "/" in spec.name or "." in Path(spec.name).name:
        raise ValueError(f"no agent file {spec.name!r}: no such file (registered agents are {agent_names()})")
    raise ValueError(
        f"unknown agent {str(spec)!r}: registered agents are {agent_names()}, or give a file or module:Factory"
    )


def agent_takes(spec: str | AgentSpec, key: str) -> bool:
    """Whether the agent ``spec`` names takes the parameter ``key`` (a file's loader takes
    every parameter: a checkpoint takes ``device`` and ``deterministic``)."""
    factory = AgentSpec.parse(spec).factory
    return key in inspect.signature(factory).parameters if factory is not None else True
