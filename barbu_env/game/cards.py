"""Cards, hands and their text form (docs/rules.md#cards-actions-and-observations).

A card is an int ``suit * 13 + rank``: suits 0 clubs, 1 diamonds, 2 hearts, 3 spades;
ranks 0 = "2" ... 8 = "10", 9 = J, 10 = Q, 11 = K, 12 = A. A set of cards (a hand, the
cards played by a seat, a trick) is a 52-bit int with bit ``card`` set. This is the
only card encoding in the project.

>>> card_from_text("QS"), card_text(37), hand_text(parse_hand("AH 2C 10d"))
(49, 'KH', '2C TD AH')
"""

from __future__ import annotations

from collections.abc import Iterable

from ..util.files import quote

NUM_CARDS = 52
NUM_SUITS = 4
NUM_RANKS = 13

CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
SUIT_LETTERS = "CDHS"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
RANK_LETTERS = "23456789TJQKA"
RANK_NAMES = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
QUEEN, KING, ACE = 10, 11, 12

FULL_DECK = (1 << NUM_CARDS) - 1
#: SUIT_MASK[s]: the 13 bits of suit s.
SUIT_MASK = tuple(((1 << NUM_RANKS) - 1) << (NUM_RANKS * s) for s in range(NUM_SUITS))
#: RANK_MASK[r]: the four cards of rank r.
RANK_MASK = tuple(sum(1 << (s * NUM_RANKS + r) for s in range(NUM_SUITS)) for r in range(NUM_RANKS))
HEARTS_MASK = SUIT_MASK[HEARTS]
QUEENS_MASK = RANK_MASK[QUEEN]
KING_OF_HEARTS = HEARTS * NUM_RANKS + KING  # 37
ACE_OF_HEARTS = HEARTS * NUM_RANKS + ACE  # 38


def card(suit: int, rank: int) -> int:
    """Card id of ``rank`` in ``suit``: ``card(HEARTS, KING) == 37``."""
    return suit * NUM_RANKS + rank


def suit_of(c: int) -> int:
    return c // NUM_RANKS


def rank_of(c: int) -> int:
    return c % NUM_RANKS


def card_text(c: int) -> str:
    """``49 -> "QS"``."""
    if not 0 <= c < NUM_CARDS:
        raise ValueError(f"card id {c} is not in 0..51")
    return RANK_LETTERS[c % NUM_RANKS] + SUIT_LETTERS[c // NUM_RANKS]


def card_from_text(text: str) -> int:
    """``"QS" -> 49``; ``"10C"`` and lower case are accepted."""
    t = text.strip().upper()
    if t[:2] == "10":
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANK_LETTERS or t[1] not in SUIT_LETTERS:
        raise ValueError(f"unknown card text {quote(text)} (expected rank then suit, e.g. 'QS', 'TD', '10D')")
    return SUIT_LETTERS.index(t[1]) * NUM_RANKS + RANK_LETTERS.index(t[0])


def to_card(value: int | str) -> int:
    """A card given as an id or as text."""
    if isinstance(value, str):
        return card_from_text(value)
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise ValueError(f"a card is an id 0..51 or text like 'QS', not {quote(value)}")
    c = int(value)
    if not 0 <= c < NUM_CARDS:
        raise ValueError(f"card id {quote(c)} is not in 0..51")
    return c


def cards_of(mask: int) -> list[int]:
    """The card ids in a set (an int, or a numpy integer such as an element of a uint64 array), ascending."""
    out, mask = [], int(mask)
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def mask_of(cards: Iterable[int | str]) -> int:
    m = 0
    for c in cards:
        m |= 1 << to_card(c)
    return m


def parse_hand(text: str | Iterable[int | str]) -> int:
    """A set of cards from text ("AS KS 2H") or from ids/texts; duplicates are an error."""
    items = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    m = mask_of(items)
    if m.bit_count() != len(items):
        raise ValueError(f"duplicate card in {quote(text)}")
    return m


def hand_text(mask: int) -> str:
    """Cards of a set as text in id order (clubs first, low to high): ``"2C TD AH"``."""
    return " ".join(card_text(c) for c in cards_of(mask))


def highest(mask: int) -> int:
    """The highest card id in a non-empty set (within one suit: the highest rank)."""
    return mask.bit_length() - 1
