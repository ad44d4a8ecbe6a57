"""The league's cache: one JSON file per format of a pairing, named by a hash of what
decides its games (``cache_key``): the four agents' identities (``AgentSpec.identity``)
with the bytes of the files that decide how they play (``AgentSpec.sources``: their
checkpoints and the source of their code), the deal sets, the seed, the rules and barbu's
version. An agent whose code or weights change is played again. An entry that does not
load (damaged, or of another layout) is played again and overwritten.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ... import __version__
from ...agents.registry import AgentSpec
from ...game.rules import Rules
from ...util.files import read_bytes, write_text
from ..tournament.schedule import deal_sets
from .results import FormatResult

#: An entry is read up to this many bytes, plus ``BYTES_PER_SET`` per deal set (a cache
#: copied from elsewhere is a stranger's file).
READ_BASE, BYTES_PER_SET = 64_000, 100


def _digest(path: Path) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names and bytes, in name order)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        digest.update(str(f.relative_to(path)).encode() + b"\0" if f != path else b"")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class Cache:
    """The cache folder of one league; each file's bytes are hashed once."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._digests: dict[Path, str] = {}

    def key(self, table: list[AgentSpec], games: int, seed: int, rules: Rules) -> dict[str, Any]:
        """What decides a format's games (see the module docstring)."""
        agents = [{"spec": s.identity, "sources": [self._sha256(p) for p in s.sources()]} for s in table]
        return {
            "barbu": __version__,
            "agents": agents,
            "deal_sets": deal_sets(games),
            "seed": seed,
            "rules": rules.to_dict(),
        }

    def _sha256(self, path: Path) -> str:
        if path not in self._digests:
            self._digests[path] = _digest(path) if path.exists() else "missing"
        return self._digests[path]

    def path(self, key: dict[str, Any]) -> Path:
        return self.folder / f"{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]}.json"

    def read(self, key: dict[str, Any]) -> FormatResult | None:
        """The result saved under ``key``, or None (no entry, or one that does not load)."""
        try:
            entry = json.loads(read_bytes(self.path(key), READ_BASE + BYTES_PER_SET * key["deal_sets"]))
            if entry["key"] != json.loads(json.dumps(key)):
                return None
            return FormatResult.from_dict(entry["result"], cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, key: dict[str, Any], result: dict[str, Any]) -> None:
        """Save a result (``FormatResult.to_dict``) whole or not at all (``OutputError``
        naming the file if it cannot be written)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text(self.path(key), json.dumps({"key": key, "result": result}, indent=1) + "\n")
