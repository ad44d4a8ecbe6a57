"""The schema of ``barbu_training.config`` on the command line and in files: YAML configs
(``load_args``), one ``--field`` flag per field (``add_field_flags``, ``build_parser``) and
the table of docs/training.md (``markdown_table``, written there by ``docs/docstring_to_md.py``).

``barbu train --config configs/train/quick.yaml --seed 3`` reads a config of ``Args``
fields, then applies the flags; a field ``Args`` does not have is refused in one line.
``add_field_flags`` gives any dataclass such flags (the SB3, RLlib and TorchRL scripts use
it): a pydantic one's help is each field's description and valid values, a plain one's the
docstring under each field.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import textwrap
from typing import Any, Literal, get_args, get_origin

from barbu_env.util.argtypes import OneLineParser
from barbu_env.util.files import InputError, read_text, safe_yaml
from barbu_training.config import Args, ConfigError, ValidationError, config_error

#: Fields of a chain of ``stages`` that are not every stage's: the base of the stages'
#: names, the first stage's start, the chain's resume (flags for them set the chain's).
CHAIN_FIELDS = ("exp_name", "init", "resume")


def load_args(config: str | None = None, overrides: dict[str, Any] | None = None) -> Args:
    """Args from a YAML file (``safe_yaml``: plain data, nothing run) and overrides (the
    command line's flags); anything wrong is a ConfigError of one line. In a chain of
    ``stages`` the overrides win over every stage's own values too, but for the chain's
    fields (``CHAIN_FIELDS``): ``exp_name`` and ``resume`` are the top level's only, ``init``
    the first stage's."""
    where = f"{config}: " if config else ""
    values: dict[str, Any] = {}
    if config:
        try:
            values = safe_yaml(read_text(config, what="config"), f"config {config}")
        except (OSError, InputError) as e:
            raise ConfigError(str(e)) from None
        if not isinstance(values, dict):
            raise ConfigError(f"{where}a training config is a mapping of fields, not {values!r:.60}")
    flags = dict(overrides or {})
    values = values | flags
    if flags and isinstance(values.get("stages"), list):  # the flags are the last word in every stage
        every = {k: v for k, v in flags.items() if k not in CHAIN_FIELDS}
        values["stages"] = [
            stage | every | ({"init": flags["init"]} if k == 0 and "init" in flags else {})
            if isinstance(stage, dict)
            else stage
            for k, stage in enumerate(values["stages"])
        ]
    try:
        return Args(**values)
    except ValidationError as e:
        raise config_error(e, where) from None


def valid(info: Any) -> str:
    """A pydantic field's valid values in words (``--help`` and docs/training.md say them)."""
    kind = info.annotation
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(get_args(kind))
    if kind is bool:
        return "true or false"
    if kind not in (int, float):
        return {str: "text", dict: "a mapping"}.get(kind, "a list of mappings")
    b = {n: getattr(m, n) for m in info.metadata for n in ("ge", "gt", "le") if hasattr(m, n)}
    low = f"above {b['gt']:,}" if "gt" in b else f"at least {b['ge']:,}"
    return f"{'an integer' if kind is int else 'a number'} {low}" + (f", at most {b['le']:,}" if "le" in b else "")


def field_docs(cls: type) -> dict[str, str]:
    """Each field's help: a pydantic dataclass's description and valid values, or the
    docstring under each field of a plain dataclass, read from its source."""
    if hasattr(cls, "__pydantic_fields__"):
        fields = cls.__pydantic_fields__
        return {name: f"{' '.join((f.description or '').split())} Valid: {valid(f)}." for name, f in fields.items()}
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def markdown_table(cls: type = Args) -> str:
    """The table of docs/training.md: each field, its valid values, its default and its meaning."""
    rows = ["| field | valid values | default | meaning |", "|---|---|---|---|"]
    for name, f in cls.__pydantic_fields__.items():
        default = f.get_default(call_default_factory=True)
        shown = str(default).lower() if isinstance(default, bool) else f"`{json.dumps(default)}`"
        meaning = " ".join((f.description or "").split()).replace("|", r"\|")
        rows.append(f"| `{name}` | {valid(f)} | {shown} | {meaning} |")
    return "\n".join(rows) + "\n"


def add_field_flags(parser: argparse.ArgumentParser, cls: type, defaults: bool = True) -> argparse.ArgumentParser:
    """One ``--field`` per field of the dataclass ``cls`` of type int, float, str or bool
    (fields of other types are left to config files; a ``Literal`` is text), its help
    ``field_docs``'; without ``defaults`` an absent flag is left out of the namespace (so
    that a config file can fill it)."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        kind = "str" if str(f.type).startswith("Literal") else f.type
        if kind not in ("int", "float", "str", "bool"):
            continue  # a list (``stages``): config files only
        default = f.default.default if hasattr(f.default, "default") else f.default  # a pydantic Field's
        parser.add_argument(
            "--" + f.name.rstrip("_").replace("_", "-"),
            dest=f.name,
            type={"int": int, "float": float, "str": str, "bool": _bool}[kind],
            default=default if defaults else argparse.SUPPRESS,
            help=f"{docs.get(f.name, '')} (default {default!r})".replace("%", "%%"),
        )
    return parser


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``barbu train``'s command line: ``--config FILE`` plus one ``--field`` per Args
    field (overrides the config)."""
    parser = parser or OneLineParser(
        prog="barbu train", description="Self-play PPO for Barbu, one shared masked policy for all four seats."
    )
    parser.add_argument("--config", help="YAML file of Args fields (configs/train/*.yaml)")
    return add_field_flags(parser, Args, defaults=False)
