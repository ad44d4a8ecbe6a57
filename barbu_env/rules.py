"""Rule variants as one frozen dataclass of named switches.

The rules, every switch and the presets are described in ``docs/rules.md``; the defaults
are the standard game. Presets are YAML files shipped inside the package, in
``barbu_env/presets/``: a mapping of the switches that differ from the defaults, plus an
optional ``description``. An unknown switch, a bad value or an unknown preset is a
``RulesError`` (a ``ValueError``), never silently ignored.

>>> Rules().trumps_must_overtrump, load_rules({"rotation": "every_hand"}).rotation
(True, 'every_hand')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROTATIONS = ("seven_in_a_row", "every_hand")
DOUBLING_TARGETS = ("anyone", "declarer_only")

#: Where the presets live: ``barbu_env/presets`` (package data, so installed wheels have them too).
PRESETS_DIR = Path(__file__).resolve().parent / "presets"


class RulesError(ValueError):
    """A rule switch, value or preset that does not exist."""


@dataclass(frozen=True)
class Rules:
    # --- declarers (docs/rules.md#declarers-and-the-28-hands) ---
    rotation: str = "seven_in_a_row"
    """"seven_in_a_row": a declarer declares 7 hands in a row, then the player on the left;
    "every_hand": the declarer role moves left after every hand."""

    # --- trick play (docs/rules.md#the-trick-contracts) ---
    trumps_must_overtrump: bool = True
    """Trumps: a player playing a trump onto a trick holding trumps must beat them if able."""
    trumps_must_ruff: bool = True
    """Trumps: a player void in the led plain suit who holds trumps must play one."""
    barbu_king_first_chance: bool = False
    """Barbu: the holder of K♥ must play it when void in the led suit, and on a heart lead
    once A♥ is in the trick."""
    end_no_hearts_early: bool = False
    """No Hearts ends once all 13 hearts are taken (scores unchanged)."""
    end_no_queens_early: bool = True
    """No Queens ends when the trick holding the 4th queen is complete."""
    end_barbu_early: bool = True
    """Barbu ends when the trick holding K♥ is complete."""

    # --- doubling (docs/rules.md#doubling) ---
    doubling_targets: str = "anyone"
    """"anyone": in the negative contracts anyone may double anyone;
    "declarer_only": only the declarer may be doubled, in every contract."""
    redouble_pass: bool = False
    """After the four doubling turns, each non-declarer doubled by a later player gets one
    more turn to redouble those players."""
    min_declarer_doubles: int = 2
    """Within each declarer's 7 hands every other player must double that declarer at
    least this many times (0..7); enforced through the mask."""

    # --- points (docs/rules.md#the-seven-contracts) ---
    no_tricks_points: int = -2
    """No Tricks: points per trick taken."""
    no_hearts_points: int = -2
    """No Hearts: points per heart taken other than A♥."""
    no_hearts_ace_points: int = -6
    """No Hearts: points for A♥."""
    no_queens_points: int = -6
    """No Queens: points per queen taken."""
    barbu_points: int = -20
    """Barbu: points for the trick holding K♥."""
    no_last_two_points: tuple[int, int] = (-10, -20)
    """No Last Two: points for trick 12 and for trick 13."""
    trumps_points: int = 5
    """Trumps: points per trick taken."""
    domino_scores: tuple[int, int, int, int] = (45, 20, 5, -5)
    """Domino: points by finishing order, first to last."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "bool" and not isinstance(value, bool):
                raise RulesError(f"rule {f.name!r} must be true or false, not {value!r}")
            if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise RulesError(f"rule {f.name!r} must be an integer, not {value!r}")
            if f.type.startswith("tuple"):
                n = f.type.count("int")
                if (
                    isinstance(value, (str, bytes))
                    or not hasattr(value, "__len__")
                    or len(value) != n
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                ):
                    raise RulesError(f"rule {f.name!r} must be a list of {n} integers, not {value!r}")
                object.__setattr__(self, f.name, tuple(value))
        if self.rotation not in ROTATIONS:
            raise RulesError(f"rule 'rotation' must be one of {ROTATIONS}, not {self.rotation!r}")
        if self.doubling_targets not in DOUBLING_TARGETS:
            raise RulesError(
                f"rule 'doubling_targets' must be one of {DOUBLING_TARGETS}, not {self.doubling_targets!r}"
            )
        if not 0 <= self.min_declarer_doubles <= 7:
            raise RulesError(f"rule 'min_declarer_doubles' must be in 0..7, not {self.min_declarer_doubles!r}")

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> Rules:
        """Rules from a mapping of switches; missing switches take their defaults."""
        if not isinstance(mapping, Mapping):
            raise RulesError(f"rules must be a mapping of switches, not {mapping!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted((k for k in mapping if k not in known), key=repr)  # YAML keys need not be strings
        if unknown:
            raise RulesError(f"unknown rule switch(es) {unknown}; known switches: {sorted(known)}")
        return cls(**mapping)

    def to_dict(self) -> dict[str, Any]:
        """The switches as plain YAML/JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def changes(self) -> dict[str, Any]:
        """Only the switches that differ from the defaults."""
        default = Rules().to_dict()
        return {k: v for k, v in self.to_dict().items() if default[k] != v}


def preset_names() -> list[str]:
    """Names of the presets in ``barbu_env/presets``."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def read_rules_file(path: str | Path) -> Rules:
    """Rules from a YAML file: a mapping of switches and an optional ``description``."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except yaml.YAMLError as e:
        raise RulesError(f"{path}: not YAML ({' '.join(str(e).split())})") from None
    if not isinstance(data, Mapping):
        raise RulesError(f"{path}: a rules file holds a mapping of switches")
    data = dict(data)
    data.pop("description", None)
    try:
        return Rules.from_mapping(data)
    except RulesError as e:
        raise RulesError(f"{path}: {e}") from None


def load_rules(spec: Rules | str | Mapping[str, Any] | None = None) -> Rules:
    """Rules from a ``Rules``, a preset name, a path to a YAML file, a mapping, or None
    (the defaults)."""
    if spec is None:
        return Rules()
    if isinstance(spec, Rules):
        return spec
    if isinstance(spec, Mapping):
        return Rules.from_mapping(spec)
    if isinstance(spec, (str, Path)):
        path = PRESETS_DIR / f"{spec}.yaml"
        if path.is_file():
            return read_rules_file(path)
        if str(spec).endswith((".yaml", ".yml")) and Path(spec).is_file():
            return read_rules_file(spec)
        if str(spec) == "standard":
            return Rules()
        raise RulesError(f"unknown rules preset {spec!r}; presets: {preset_names()}")
    raise RulesError(f"rules must be a preset name, a mapping or a Rules, not {spec!r}")
