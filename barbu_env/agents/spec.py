"""Agent specs, parsed once: ``AgentSpec.parse("pimc:worlds=32,rollout=random")``.

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
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        from .registry import factory_of

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
            found += [Path(p) for p in (inspect.getsourcefile(factory), getattr(factory, "checkpoint", None)) if p]
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
