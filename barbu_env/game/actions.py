"""Action ids: one space of 85 ids for every decision (the table is in
``barbu_env.game.engine``'s docstring), as int8 masks, and as readable text and back.

The engine imports this module, never the other way: the ids, ``NUM_ACTIONS`` and
``mask_array`` are here so that anything that needs them (the environments, the
tournament, the agents) needs no engine for them.

>>> action_text(49), action_text(54), action_text(62), action_text(68), action_text(81), action_text(84)
('play QS', 'declare no_queens', 'trump spades', 'domino 7', 'double left+right', 'pass')
>>> parse_action("play 10h"), parse_action("double opposite"), parse_action("double nobody")
(34, 78, 76)
>>> mask_array((1 << DECLARE_OFFSET) | (1 << PASS_ACTION)).nonzero()[0].tolist()
[52, 84]
"""

from __future__ import annotations

import numpy as np

from ..util.files import quote
from .cards import RANK_NAMES, SUIT_NAMES, card_from_text, card_text, cards_of
from .constants import AGENTS, CONTRACT_NAMES

PLAY_OFFSET = 0  # 0-51: play card id
DECLARE_OFFSET = 52  # 52-58: declare Contract
TRUMP_OFFSET = 59  # 59-62: name the trump suit
RANK_OFFSET = 63  # 63-75: name the Domino starting rank
DOUBLE_OFFSET = 76  # 76-83: doubling turn, 76 + 3-bit set of seats named relative to the actor
PASS_ACTION = 84  # Domino pass
NUM_ACTIONS = 85
#: Bytes of an action bit set (85 bits).
_MASK_BYTES = (NUM_ACTIONS + 7) // 8

#: Names of the doubling bits, relative to the actor: bit 0 left, bit 1 opposite, bit 2 right.
RELATIVE_NAMES = ("left", "opposite", "right")


def actions_of(legal: int) -> list[int]:
    """The action ids in an action bit set (``BarbuState.legal_mask``'s 85 bits), ascending.

    >>> actions_of(1 << 52 | 1 << 84)
    [52, 84]
    """
    return cards_of(legal)  # bit k is action k, as bit c of a card set is card c: one bit walk


def mask_array(legal: int) -> np.ndarray:
    """An 85-bit legal-action set as an int8[85] mask."""
    bits = np.unpackbits(np.frombuffer(legal.to_bytes(_MASK_BYTES, "little"), dtype=np.uint8), bitorder="little")
    return bits[:NUM_ACTIONS].view(np.int8)


def action_text(action: int) -> str:
    """Readable text of an action id."""
    a = int(action)
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
    raise ValueError(
        f"cannot read action {quote(text)} (e.g. 'play QH', 'declare no_queens', 'trump spades', "
        "'domino 7', 'double left+right', 'double nobody', 'pass')"
    )


__all__ = [
    "AGENTS",
    "DECLARE_OFFSET",
    "DOUBLE_OFFSET",
    "NUM_ACTIONS",
    "PASS_ACTION",
    "PLAY_OFFSET",
    "RANK_OFFSET",
    "RELATIVE_NAMES",
    "TRUMP_OFFSET",
    "action_text",
    "actions_of",
    "mask_array",
    "parse_action",
]
