"""Action ids (SPEC B2) to readable text and back.

>>> action_text(49), action_text(54), action_text(62), action_text(68), action_text(81), action_text(84)
('play QS', 'declare no_queens', 'trump spades', 'domino 7', 'double left+right', 'pass')
>>> parse_action("play 10h"), parse_action("double opposite"), parse_action("double nobody")
(34, 78, 76)
"""

from __future__ import annotations

from .cards import RANK_NAMES, SUIT_NAMES, card_from_text, card_text
from .engine import (
    CONTRACT_NAMES,
    DECLARE_OFFSET,
    DOUBLE_OFFSET,
    NUM_ACTIONS,
    PASS_ACTION,
    RANK_OFFSET,
    TRUMP_OFFSET,
)

#: Names of the doubling bits, relative to the actor: bit 0 left, bit 1 opposite, bit 2 right.
RELATIVE_NAMES = ("left", "opposite", "right")


def action_text(action: int) -> str:
    """Readable text of an action id."""
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action id {action!r} is not in 0..{NUM_ACTIONS - 1}")
    if a < DECLARE_OFFSET:
        return f"play {card_text(a)}"
    if a < TRUMP_OFFSET:
        return f"declare {CONTRACT_NAMES[a - DECLARE_OFFSET]}"
    if a < RANK_OFFSET:
        return f"trump {SUIT_NAMES[a - TRUMP_OFFSET]}"
    if a < DOUBLE_OFFSET:
        return f"domino {RANK_NAMES[a - RANK_OFFSET]}"
    if a < PASS_ACTION:
        b = a - DOUBLE_OFFSET
        named = [RELATIVE_NAMES[k] for k in range(3) if (b >> k) & 1]
        return "double " + ("+".join(named) if named else "nobody")
    return "pass"


def parse_action(text: str) -> int:
    """The action id of a text as ``action_text`` writes it (case-insensitive; "10" for T)."""
    words = text.strip().lower().split(None, 1)
    verb, arg = (words + [""])[:2] if words else ("", "")
    arg = arg.strip()
    if verb == "pass" and not arg:
        return PASS_ACTION
    if verb == "play":
        return card_from_text(arg)
    if verb == "declare" and arg.replace(" ", "_") in CONTRACT_NAMES:
        return DECLARE_OFFSET + CONTRACT_NAMES.index(arg.replace(" ", "_"))
    if verb == "trump" and arg in SUIT_NAMES:
        return TRUMP_OFFSET + SUIT_NAMES.index(arg)
    if verb == "domino":
        rank = {"t": "10", "j": "J", "q": "Q", "k": "K", "a": "A"}.get(arg, arg.upper())
        if rank in RANK_NAMES:
            return RANK_OFFSET + RANK_NAMES.index(rank)
    if verb == "double":
        names = [] if arg in ("nobody", "none", "") else arg.replace(",", "+").replace(" ", "").split("+")
        if all(n in RELATIVE_NAMES for n in names) and len(set(names)) == len(names):
            return DOUBLE_OFFSET + sum(1 << RELATIVE_NAMES.index(n) for n in names)
    raise ValueError(f"cannot read action {text!r} (e.g. 'play QH', 'declare no_queens', 'trump spades', "
                     "'domino 7', 'double left+right', 'double nobody', 'pass')")
