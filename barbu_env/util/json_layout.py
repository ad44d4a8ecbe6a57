"""JSON laid out for people: ``json_text`` indents any JSON value, keeping on one line a
value that fits in 100 characters (and every row of a list named ``games``);
``write_json`` writes it, with a newline, whole or not at all (``barbu_env.util.files``).
The tournament's and the league's JSON files are written so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .files import write_text


def json_text(value: Any, depth: int = 0, key: str = "") -> str:
    """Indented JSON in which a value that fits in 100 characters (and every row of a
    list named ``games``) stays on one line.

    >>> print(json_text({"a": [1, 2], "games": [{"game": 0}]}))
    {
      "a": [1, 2],
      "games": [{"game": 0}]
    }
    """
    flat = json.dumps(value)
    if not isinstance(value, (dict, list)) or not value:
        return flat
    if depth > 0 and (len(flat) <= 100 or key == "games[]"):
        return flat
    pad = "  " * depth
    if isinstance(value, dict):
        items = [f"{pad}  {json.dumps(k)}: {json_text(v, depth + 1, k)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    items = [f"{pad}  {json_text(v, depth + 1, key + '[]')}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{pad}]"


def write_json(value: Any, path: str | Path | None = None) -> str:
    """``json_text(value)`` and a newline; written to ``path`` if given (whole or not at all)."""
    text = json_text(value) + "\n"
    if path is not None:
        write_text(path, text)
    return text


__all__ = ["json_text", "write_json"]
