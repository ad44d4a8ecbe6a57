"""Rule variants as one frozen dataclass of named switches.

The rules, every switch and the presets are described in ``docs/rules.md``; the defaults
are the standard game. Presets are YAML files shipped inside the package, in
``barbu_env/game/presets/``: a mapping of the switches that differ from the defaults, plus an
optional ``description``. An unknown switch, a bad value or an unknown preset is a
``RulesError`` (a ``ValueError``), never silently ignored.

Every point switch lies in ``-POINTS_LIMIT..POINTS_LIMIT`` (10 000): then every score a game
can produce (a hand's raw or settled score, a game total) stays within ``SCORE_LIMIT``
(2**24), where the integers the engine hands out stay exact. ``score_bound(rules)`` is the
worst case of a game under given rules; ``docs/rules.md#how-large-scores-can-get`` derives it.

>>> Rules().trumps_must_overtrump, load_rules({"rotation": "every_hand"}).rotation
(True, 'every_hand')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.files import InputError, quote, read_text, safe_yaml

ROTATIONS = ("seven_in_a_row", "every_hand")
DOUBLING_TARGETS = ("anyone", "declarer_only")

#: Where the presets live: ``barbu_env/game/presets`` (package data, so installed wheels have them too).
PRESETS_DIR = Path(__file__).resolve().parent / "presets"


class RulesError(ValueError):
    """A rule switch, value or preset that does not exist."""


#: Every score must stay within +-SCORE_LIMIT: float32 rewards are exact integers up to 2**24.
SCORE_LIMIT = 2**24

#: The point switches (a bound applies to each of their values) and, per contract, the
#: switch values a hand's raw scores are made of: ``(switch, count)`` is ``count`` items
#: worth ``switch`` points each, shared out between the seats (13 tricks, 12 hearts and A♥,
#: 4 queens, K♥, the last two tricks, 13 tricks). Domino, whose values are a finishing
#: order, is apart.
POINT_SWITCHES = (
    "no_tricks_points",
    "no_hearts_points",
    "no_hearts_ace_points",
    "no_queens_points",
    "barbu_points",
    "no_last_two_points",
    "trumps_points",
    "domino_scores",
)
_CONTRACT_ITEMS = (  # in contract order; the last two (Trumps, Domino) are the positive contracts
    (("no_tricks_points", 13),),
    (("no_hearts_points", 12), ("no_hearts_ace_points", 1)),
    (("no_queens_points", 4),),
    (("barbu_points", 1),),
    (("no_last_two_points", 1),),  # both values: one trick each
    (("trumps_points", 13),),
)


def _hand_bounds(values: Mapping[str, Any], anyone: bool) -> list[tuple[int, int]]:
    """Per contract, in contract order, the largest absolute settled score of one hand for
    its declarer and for a non-declarer, under point switches ``values`` (a mapping switch
    -> int or tuple of ints); ``_game_bound`` has the derivation."""

    def size(v: Any) -> int:
        return sum(abs(x) for x in v) if isinstance(v, tuple) else abs(v)

    out = []
    for c, items in enumerate(_CONTRACT_ITEMS):
        s = sum(n * size(values[name]) for name, n in items)
        positive = c == len(_CONTRACT_ITEMS) - 1
        others = 1 if positive or not anyone else 3
        out.append(((1 + 2 * 3) * s, (1 + 2 * others) * s))
    d = values["domino_scores"]
    top, spread = max(abs(x) for x in d), max(d) - min(d)
    out.append((top + 2 * 3 * spread, top + 2 * 1 * spread))
    return out


def _game_bound(values: Mapping[str, Any], anyone: bool) -> int:
    """The largest absolute score (raw, settled or game total) a seat can reach in a game
    whose point switches have ``values`` (a mapping switch -> int or tuple of ints): each
    contract's worst case as declarer and three times as a non-declarer
    (docs/rules.md#how-large-scores-can-get derives it)."""
    return sum(declarer + 3 * other for declarer, other in _hand_bounds(values, anyone))


#: The worst game per point of switch value: every switch at +-1 (same signs, anyone may double anyone).
_GAME_BOUND_PER_POINT = _game_bound(
    {**{name: 1 for name in POINT_SWITCHES}, "no_last_two_points": (1, 1), "domino_scores": (1, -1, -1, -1)},
    anyone=True,
)
#: The bound on every point switch's values: the largest power of ten whose worst game stays
#: within ``SCORE_LIMIT`` (10 000).
POINTS_LIMIT = 10 ** (len(str(SCORE_LIMIT // _GAME_BOUND_PER_POINT)) - 1)


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
                raise RulesError(f"rule {f.name!r} must be true or false, not {quote(value)}")
            if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise RulesError(f"rule {f.name!r} must be an integer, not {quote(value)}")
            if f.type.startswith("tuple"):
                n = f.type.count("int")
                if (
                    isinstance(value, (str, bytes))
                    or not hasattr(value, "__len__")
                    or len(value) != n
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                ):
                    raise RulesError(f"rule {f.name!r} must be a list of {n} integers, not {quote(value)}")
                object.__setattr__(self, f.name, tuple(value))
        if self.rotation not in ROTATIONS:
            raise RulesError(f"rule 'rotation' must be one of {ROTATIONS}, not {quote(self.rotation)}")
        if self.doubling_targets not in DOUBLING_TARGETS:
            raise RulesError(
                f"rule 'doubling_targets' must be one of {DOUBLING_TARGETS}, not {quote(self.doubling_targets)}"
            )
        if not 0 <= self.min_declarer_doubles <= 7:
            raise RulesError(f"rule 'min_declarer_doubles' must be in 0..7, not {quote(self.min_declarer_doubles)}")
        for name in POINT_SWITCHES:
            value = getattr(self, name)
            if any(abs(v) > POINTS_LIMIT for v in (value if isinstance(value, tuple) else (value,))):
                raise RulesError(
                    f"rule {name!r} must be {'integers' if isinstance(value, tuple) else 'an integer'} in "
                    f"-{POINTS_LIMIT}..{POINTS_LIMIT} (so that every score stays within +-{SCORE_LIMIT}), "
                    f"not {quote(value)}"
                )

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> Rules:
        """Rules from a mapping of switches; missing switches take their defaults."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted((k for k in mapping if k not in known), key=repr)  # YAML keys need not be strings
        if unknown:
            raise RulesError(f"unknown rule switch(es) {quote(unknown)}; known switches: {sorted(known)}")
        return cls(**mapping)

    def score_bound(self) -> int:
        """The largest absolute score a seat can reach in a game under these rules: a
        hand's raw or settled score, or a game total (at most ``SCORE_LIMIT``).

        >>> Rules().score_bound(), Rules().score_bound() <= SCORE_LIMIT
        (5460, True)
        """
        return _game_bound({name: getattr(self, name) for name in POINT_SWITCHES}, self.doubling_targets == "anyone")

    def hand_bounds(self) -> list[int]:
        """Per contract (``Contract`` order), the largest absolute settled score a seat can
        reach in one hand of it under these rules (the declarer's worst case).

        >>> Rules().hand_bounds()[0]  # No Tricks: 13 tricks of -2, three redoubled bets
        182
        """
        anyone = self.doubling_targets == "anyone"
        return [declarer for declarer, _ in _hand_bounds({n: getattr(self, n) for n in POINT_SWITCHES}, anyone)]

    def to_dict(self) -> dict[str, Any]:
        """The switches as plain YAML/JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def changes(self) -> dict[str, Any]:
        """Only the switches that differ from the defaults."""
        default = Rules().to_dict()
        return {k: v for k, v in self.to_dict().items() if default[k] != v}


def preset_names() -> list[str]:
    """Names of the presets in ``barbu_env/game/presets``."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def read_rules_file(path: str | Path) -> Rules:
    """Rules from a YAML file: a mapping of switches and an optional ``description``; a file
    that is not one is a ``RulesError`` of one line naming it."""
    try:
        data = safe_yaml(read_text(path, what="rules file"), f"rules file {path}") or {}
    except InputError as e:
        raise RulesError(str(e)) from None
    except FileNotFoundError:
        raise RulesError(f"rules file {path} not found") from None
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
    if str(spec).endswith((".yaml", ".yml")):
        return read_rules_file(spec)
    if spec in preset_names():
        return read_rules_file(PRESETS_DIR / f"{spec}.yaml")
    if spec == "standard":
        return Rules()
    raise RulesError(f"unknown rules preset {quote(spec)}; presets: {preset_names()}")
