"""Numba kernels of the batched engine (``barbu_env.vector``): SPEC part A over B games
held as structure-of-arrays, with each game's observation kept up to date in place.

This is ``engine.py`` and ``observation.py`` rewritten over plain arrays, one function
per engine method and under the same name where there is one (``_legal_trick_cards``,
``_apply_double``, ``_finish_trick`` ...), so the two can be read side by side. The
rules arrive as ``rp``, an int64 array of the switches (``R_*`` below, built by
``vector.rules_params``); the observation layout is written out as literal offsets
(``O_*``) that ``vector.py`` checks against ``observation.OFFSETS`` on import, so that a
cached compilation can never disagree with the encoder silently.

State of game i (all int64 unless said):

* ``ints[i, F_*]``: the scalar fields and small per-seat arrays (``F_*`` below).
* ``cards[i, K_*]`` (uint64): card sets, one 52-bit set per entry, plus the cached
  legal-action set of the seat to act (85 bits as two words) and the game's random
  stream (splitmix64 state).
* ``table[i]`` (float32 [17, 52]): the absolute card rows of the observation, as in
  ``ObservationEncoder``: hands, trick cards, played, taken (seats 0-3 each), then
  the Domino playable set. A play changes three entries, a trick's end eight more.
* ``hblock[i, seat]`` (float32 [4, 131]): each seat's hand-level block (phase ...
  game_scores), rebuilt only when ``ints[i, F_DIRTY]`` marks it stale: after a
  declaration, trump, starting rank or doubling turn, and when a hand starts.

An observation is then 14 row copies from ``table`` in the observer's seat order, the
cached hand-level block, and the 65-value per-decision block written afresh.

Card sets are uint64 and every constant mixed with them is a ``np.uint64``: numba, like
numpy, turns ``uint64 op int64`` into float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---------------------------------------------------------------------- constants

U0 = np.uint64(0)
U1 = np.uint64(1)
SUIT_BITS = np.uint64(0x1FFF)
HEARTS_MASK = np.uint64(0x1FFF << 26)
QUEENS_MASK = np.uint64(sum(1 << (13 * s + 10) for s in range(4)))
KING_OF_HEARTS = 37
ACE_OF_HEARTS = 38

# Phases (engine.Phase) and contracts (engine.Contract).
DECLARE, TRUMP, DOMINO_RANK, DOUBLE, TRICKS, DOMINO, GAME_OVER = range(7)
NO_TRICKS, NO_HEARTS, NO_QUEENS, BARBU, NO_LAST_TWO, TRUMPS, DOMINO_CONTRACT = range(7)

# Action ids (SPEC B2).
DECLARE_OFFSET, TRUMP_OFFSET, RANK_OFFSET, DOUBLE_OFFSET, PASS_ACTION, NUM_ACTIONS = 52, 59, 63, 76, 84, 85
# The legal set is two words: lo holds actions 0-63, hi actions 64-84 (bit a - 64).
LO_TRUMP_BITS = np.uint64(0xF << TRUMP_OFFSET)
LO_RANK_BIT = np.uint64(1 << 63)  # rank "2" (action 63); ranks 3..A are hi bits 0-11
HI_RANK_BITS = np.uint64(0xFFF)
HI_DOUBLE_SHIFT = np.uint64(DOUBLE_OFFSET - 64)  # 12
HI_PASS_BIT = np.uint64(1 << (PASS_ACTION - 64))  # bit 20

# Rules switches: rp[R_*] (see vector.rules_params).
R_EVERY_HAND = 0  # rotation "every_hand" (else "seven_in_a_row")
R_OVERTRUMP = 1
R_RUFF = 2
R_KING_FIRST = 3
R_END_HEARTS = 4
R_END_QUEENS = 5
R_END_BARBU = 6
R_DECLARER_ONLY = 7  # doubling_targets "declarer_only"
R_REDOUBLE_PASS = 8
R_MIN_DOUBLES = 9
R_NO_TRICKS = 10
R_NO_HEARTS = 11
R_NO_HEARTS_ACE = 12
R_NO_QUEENS = 13
R_BARBU = 14
R_LAST_TWO = 15  # +2: trick 12, trick 13
R_TRUMPS = 17
R_DOMINO = 18  # +4: first ... last
NUM_RULE_PARAMS = 22

# Per-game int fields: ints[i, F_*] (engine.BarbuState's slots of the same meaning).
F_PHASE = 0  # Phase
F_CUR = 1  # seat to act; -1 once the game is over
F_DECLARER = 2  # seat declaring this hand
F_FIRST = 3  # seat declaring hand 0
F_HAND = 4  # hand number 0..27, 28 once the game is over
F_CONTRACT = 5  # Contract, -1 before the declaration
F_TRUMP = 6  # trump suit or -1
F_RANK = 7  # Domino starting rank or -1
F_DPOS = 8  # index into the doubling order of the seat to act
F_DLEN = 9  # length of the doubling order (0 before doubling, 4 plus redouble-pass turns)
F_TRICK_NO = 10  # 0-based number of the current trick
F_LEADER = 11  # seat that led the current trick
F_TSIZE = 12  # cards in the current trick
F_LED = 13  # suit led to the current trick, -1 before the lead
F_WIN_SEAT = 14  # seat winning the current trick so far
F_WIN_CARD = 15  # card winning the current trick so far
F_NOUT = 16  # Domino: players out so far
F_DIRTY = 17  # 4-bit set of seats whose cached hand-level block is stale
F_PRESET = 18  # number of preset deals of this game (hands 0 .. F_PRESET-1)
F_DECISIONS = 19  # decisions taken in this game so far
F_LEFT = 20  # +4: per seat, 7-bit set of contracts not yet declared
F_NAMED = 24  # +4: per seat, 4-bit set of the seats it named while doubling
F_WON = 28  # +4: tricks won per seat this hand
F_POINTS = 32  # +4: raw points per seat so far this hand
F_SCORES = 36  # +4: game totals per seat
F_VOIDS = 40  # +4: per seat, 4-bit set of suits it has shown void in this hand
F_TRICK = 44  # +4: card each seat played to the current trick, -1 if none
F_OUT = 48  # +4: Domino finishing order (F_NOUT entries)
F_ORDER = 52  # +8: doubling order (F_DLEN entries)
F_OWED = 60  # +16: owed[4 * i + d], doubles seat i still owes declarer d
NUM_INT_FIELDS = 76

# Per-game card words: cards[i, K_*] (uint64).
K_DEALT = 0  # +4: the four hands as dealt this hand
K_HANDS = 4  # +4: the four hands now
K_PLAYED = 8  # +4: cards each seat has played this hand
K_TAKEN = 12  # +4: cards in the tricks each seat has won this hand
K_TRICK = 16  # cards in the current trick
K_PLAYABLE = 17  # Domino: cards that could be placed now
K_LEGAL_LO = 18  # legal actions 0-63 of the seat to act
K_LEGAL_HI = 19  # legal actions 64-84, as bits 0-20
K_RNG = 20  # splitmix64 state of the game slot's deals
NUM_CARD_FIELDS = 21

# Absolute card-table rows (as ObservationEncoder's).
T_HANDS, T_TRICK, T_PLAYED, T_TAKEN, T_PLAYABLE = 0, 4, 8, 12, 16
NUM_TABLE_ROWS = 17

# Observation offsets (observation.OFFSETS; checked by vector.py).
O_HAND = 0
O_TRICK = 52
O_PLAYED = 260
O_TAKEN = 468
O_PLAYABLE = 676
O_HAND_BLOCK = 728  # start of the hand-level block; offsets below are within it
H_PHASE, H_CONTRACT, H_TRUMP, H_RANK, H_DECLARER = 0, 7, 14, 18, 31
H_DOUBLED, H_DONE, H_OWED, H_LEFT, H_HAND_NO, H_SCORES = 35, 51, 55, 71, 99, 127
HAND_BLOCK_LEN = 131
O_STEP_BLOCK = 859  # start of the per-decision block
O_TO_ACT, O_LEADER, O_TRICK_NO, O_WON, O_POINTS = 859, 863, 867, 880, 884
O_PLACE, O_CARDS_LEFT, O_VOIDS = 888, 904, 908
OBS_DIM = 924

# _DOUBLE_BITS[allowed, required]: 8-bit set of the doubling choices b (action 76 + b)
# naming a subset of ``allowed`` that contains ``required`` (3-bit relative seat sets).
DOUBLE_BITS = np.array(
    [[sum(1 << b for b in range(8) if b & ~a == 0 and b & r == r) for r in range(8)] for a in range(8)],
    dtype=np.uint64,
)
# De Bruijn lookup for the index of a set's lowest bit.
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DEBRUIJN_INDEX[((1 << _i) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _i
_SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
_POP_M1 = np.uint64(0x5555555555555555)
_POP_M2 = np.uint64(0x3333333333333333)
_POP_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_POP_H01 = np.uint64(0x0101010101010101)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)


# ---------------------------------------------------------------------- bits


@njit(cache=True, inline="always")
def _bit(c):
    """The one-card set {c}."""
    return U1 << np.uint64(c)


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & _POP_M1)
    x = (x & _POP_M2) + ((x >> np.uint64(2)) & _POP_M2)
    x = (x + (x >> np.uint64(4))) & _POP_M4
    return np.int64((x * _POP_H01) >> np.uint64(56))


@njit(cache=True, inline="always")
def _lowest(x):
    """Index of the lowest set bit of a non-empty set."""
    return _DEBRUIJN_INDEX[((x & (~x + U1)) * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True, inline="always")
def _suit_mask(s):
    return SUIT_BITS << np.uint64(13 * s)


@njit(cache=True, inline="always")
def _relative_set(seat, absolute):
    """A 4-bit absolute seat set as the 3-bit set relative to ``seat`` (bit 0 = left)."""
    return ((absolute | absolute << 4) >> (seat + 1)) & 7


# ---------------------------------------------------------------------- random deals


@njit(cache=True, inline="always")
def _next_random(c):
    """Next 64-bit output of the slot's splitmix64 stream (Steele et al. 2014)."""
    z = c[K_RNG] + _SPLITMIX_GAMMA
    c[K_RNG] = z
    z = (z ^ (z >> np.uint64(30))) * _SPLITMIX_M1
    z = (z ^ (z >> np.uint64(27))) * _SPLITMIX_M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _below(c, n):
    """A uniform int in [0, n), n < 2**32: Lemire's multiply-shift with rejection
    (Lemire 2019, "Fast random integer generation in an interval", algorithm 5)."""
    un = np.uint64(n)
    m = (_next_random(c) >> np.uint64(32)) * un
    low = m & _LOW32
    if low < un:
        t = (_TWO32 - un) % un
        while low < t:
            m = (_next_random(c) >> np.uint64(32)) * un
            low = m & _LOW32
    return np.int64(m >> np.uint64(32))


@njit(cache=True)
def _random_deal(c):
    """Deal the 52 cards into c[K_DEALT:K_DEALT+4]: each card in turn goes to a seat
    drawn with probability proportional to the room left in its hand, which makes
    every deal equally likely."""
    room0 = room1 = room2 = room3 = 13
    h0 = h1 = h2 = h3 = U0
    for card in range(52):
        r = _below(c, 52 - card)
        b = _bit(card)
        if r < room0:
            h0 |= b
            room0 -= 1
        elif r < room0 + room1:
            h1 |= b
            room1 -= 1
        elif r < room0 + room1 + room2:
            h2 |= b
            room2 -= 1
        else:
            h3 |= b
            room3 -= 1
    c[K_DEALT] = h0
    c[K_DEALT + 1] = h1
    c[K_DEALT + 2] = h2
    c[K_DEALT + 3] = h3


# ---------------------------------------------------------------------- game and hand set-up


@njit(cache=True)
def _new_game(g, c, tab, preset, n_preset, first, rp):
    """A new game in this slot: ``first`` declarer (-1: drawn from the slot's stream),
    ``n_preset`` deals taken from ``preset``, the rest dealt from the stream."""
    if first < 0:
        first = _below(c, 4)
    g[F_FIRST] = first
    g[F_PRESET] = n_preset
    g[F_HAND] = 0
    g[F_DECISIONS] = 0
    m = rp[R_MIN_DOUBLES]
    for p in range(4):
        g[F_LEFT + p] = 0x7F
        g[F_SCORES + p] = 0
        for d in range(4):
            g[F_OWED + 4 * p + d] = 0 if p == d else m
    _start_hand(g, c, tab, preset, rp)


@njit(cache=True)
def _start_hand(g, c, tab, preset, rp):
    h = g[F_HAND]
    if h < g[F_PRESET]:
        for p in range(4):
            c[K_DEALT + p] = preset[h, p]
    else:
        _random_deal(c)
    if rp[R_EVERY_HAND]:
        d = (g[F_FIRST] + h) % 4
    else:
        d = (g[F_FIRST] + h // 7) % 4
    g[F_DECLARER] = d
    g[F_PHASE] = DECLARE
    g[F_CUR] = d
    g[F_CONTRACT] = -1
    g[F_TRUMP] = -1
    g[F_RANK] = -1
    g[F_DPOS] = 0
    g[F_DLEN] = 0
    g[F_TRICK_NO] = 0
    g[F_LEADER] = d
    g[F_TSIZE] = 0
    g[F_LED] = -1
    g[F_WIN_SEAT] = -1
    g[F_WIN_CARD] = -1
    g[F_NOUT] = 0
    g[F_DIRTY] = 0xF
    for p in range(4):
        g[F_NAMED + p] = 0
        g[F_WON + p] = 0
        g[F_POINTS + p] = 0
        g[F_VOIDS + p] = 0
        g[F_TRICK + p] = -1
        c[K_HANDS + p] = c[K_DEALT + p]
        c[K_PLAYED + p] = U0
        c[K_TAKEN + p] = U0
    c[K_TRICK] = U0
    c[K_PLAYABLE] = U0
    # The card table: the dealt hands, every other row empty.
    tab[:, :] = 0.0
    for p in range(4):
        hand = c[K_HANDS + p]
        while hand:
            tab[T_HANDS + p, _lowest(hand)] = 1.0
            hand &= hand - U1


# ---------------------------------------------------------------------- legality


@njit(cache=True)
def _legal(g, c, rp):
    """The legal actions of the seat to act as (lo, hi): actions 0-63 and 64-84."""
    phase = g[F_PHASE]
    if phase == TRICKS:
        return _legal_trick_cards(g, c, rp), U0
    if phase == DOMINO:
        cards = c[K_HANDS + g[F_CUR]] & c[K_PLAYABLE]
        if cards:
            return cards, U0
        return U0, HI_PASS_BIT
    if phase == DOUBLE:
        return U0, _legal_doubles(g, c, rp) << HI_DOUBLE_SHIFT
    if phase == DECLARE:
        return np.uint64(g[F_LEFT + g[F_DECLARER]]) << np.uint64(DECLARE_OFFSET), U0
    if phase == TRUMP:
        return LO_TRUMP_BITS, U0
    if phase == DOMINO_RANK:
        return LO_RANK_BIT, HI_RANK_BITS
    return U0, U0


@njit(cache=True)
def _legal_trick_cards(g, c, rp):
    hand = c[K_HANDS + g[F_CUR]]
    contract = g[F_CONTRACT]
    if g[F_TSIZE] == 0:
        # Leading: No Hearts and Barbu ban a heart lead unless the hand is all hearts.
        if contract == NO_HEARTS or contract == BARBU:
            rest = hand & ~HEARTS_MASK
            return rest if rest else hand
        return hand
    led = g[F_LED]
    follow = hand & _suit_mask(led)
    if contract == TRUMPS:
        return _legal_trumps(g, c, rp, hand, follow)
    if contract == BARBU and rp[R_KING_FIRST] and hand & _bit(KING_OF_HEARTS):
        # K♥ at the first chance: when void in the led suit ...
        if not follow:
            return _bit(KING_OF_HEARTS)
        # ... and on a heart lead once A♥ is in the trick.
        if led == 2 and c[K_TRICK] & _bit(ACE_OF_HEARTS):
            return _bit(KING_OF_HEARTS)
    # Follow suit if able, else any card.
    return follow if follow else hand


@njit(cache=True)
def _legal_trumps(g, c, rp, hand, follow):
    trump = g[F_TRUMP]
    trumps = _suit_mask(trump)
    trumps_held = hand & trumps
    in_trick = (c[K_TRICK] & trumps) >> np.uint64(13 * trump)
    # Trumps above every trump in the trick (all held trumps if the trick has none).
    top = 0
    while in_trick:
        top += 1
        in_trick >>= U1
    higher = trumps_held & ~((U1 << np.uint64(13 * trump + top)) - U1) if top else trumps_held
    if g[F_LED] == trump:
        # Trump led: follow with a trump, beating the trick's trumps if able.
        if not trumps_held:
            return hand
        if rp[R_OVERTRUMP] and higher:
            return higher
        return trumps_held
    # Plain suit led: follow suit if able.
    if follow:
        return follow
    if not trumps_held:
        return hand
    if top and rp[R_OVERTRUMP]:
        # A trump is in the trick: beat it if able, else any card at all.
        return higher if higher else hand
    # Void: ruff if obliged, else any card.
    return trumps_held if rp[R_RUFF] else hand


@njit(cache=True)
def _legal_doubles(g, c, rp):
    """8-bit set of the legal doubling choices b (actions 76 + b)."""
    seat = g[F_CUR]
    d = g[F_DECLARER]
    if g[F_DPOS] >= 4:
        # Redouble pass: the later players who doubled this seat, not yet redoubled.
        targets = _redouble_pass_targets(g, seat)
        required = 0
    elif seat == d:
        # Declarer: redouble any of those who doubled them.
        targets = 0
        for t in range(4):
            if (g[F_NAMED + t] >> d) & 1:
                targets |= 1 << t
        required = 0
    else:
        if g[F_CONTRACT] >= TRUMPS or rp[R_DECLARER_ONLY]:
            targets = 1 << d
        else:
            targets = 0xF & ~(1 << seat)
        # The obligation: owing as many doubles as the declarer has hands left (this one too).
        hands_left = _popcount(np.uint64(g[F_LEFT + d])) + 1
        required = 1 << d if g[F_OWED + 4 * seat + d] >= hands_left else 0
    return DOUBLE_BITS[_relative_set(seat, targets), _relative_set(seat, required)]


@njit(cache=True)
def _redouble_pass_targets(g, seat):
    """Seats acting after ``seat`` in the four turns who doubled (not redoubled) it."""
    k = 0
    while g[F_ORDER + k] != seat:
        k += 1
    targets = 0
    named_by_seat = g[F_NAMED + seat]
    for j in range(k + 1, 4):
        t = g[F_ORDER + j]
        if (g[F_NAMED + t] >> seat) & 1 and not (named_by_seat >> t) & 1:
            targets |= 1 << t
    return targets


@njit(cache=True)
def _is_legal(c, action):
    if action < 0 or action >= NUM_ACTIONS:
        return False
    if action < 64:
        return (c[K_LEGAL_LO] >> np.uint64(action)) & U1 != U0
    return (c[K_LEGAL_HI] >> np.uint64(action - 64)) & U1 != U0


# ---------------------------------------------------------------------- actions


@njit(cache=True)
def _apply(g, c, tab, preset, rp, action, reward):
    """Apply the (legal) action of the seat to act. Returns 0, or 1 if it ended a hand
    (``reward`` then holds the settled scores), 2 if it ended the game."""
    g[F_DECISIONS] += 1
    phase = g[F_PHASE]
    if phase == TRICKS:
        return _apply_trick_card(g, c, tab, preset, rp, action, reward)
    if phase == DOMINO:
        return _apply_domino(g, c, tab, preset, rp, action, reward)
    g[F_DIRTY] = 0xF  # every other decision changes the hand-level block
    if phase == DOUBLE:
        _apply_double(g, c, tab, rp, action)
    elif phase == DECLARE:
        _apply_declare(g, action)
    elif phase == TRUMP:
        g[F_TRUMP] = action - TRUMP_OFFSET
        _start_doubling(g)
    else:  # DOMINO_RANK
        g[F_RANK] = action - RANK_OFFSET
        _start_doubling(g)
    return 0


@njit(cache=True)
def _apply_declare(g, action):
    contract = action - DECLARE_OFFSET
    d = g[F_DECLARER]
    g[F_CONTRACT] = contract
    g[F_LEFT + d] &= ~(1 << contract)
    if contract == TRUMPS:
        g[F_PHASE] = TRUMP
    elif contract == DOMINO_CONTRACT:
        g[F_PHASE] = DOMINO_RANK
    else:
        _start_doubling(g)


@njit(cache=True)
def _start_doubling(g):
    d = g[F_DECLARER]
    g[F_PHASE] = DOUBLE
    for k in range(4):
        g[F_ORDER + k] = (d + 1 + k) % 4
    g[F_DLEN] = 4
    g[F_DPOS] = 0
    g[F_CUR] = g[F_ORDER]


@njit(cache=True)
def _apply_double(g, c, tab, rp, action):
    seat = g[F_CUR]
    rel = action - DOUBLE_OFFSET
    for k in range(3):
        if (rel >> k) & 1:
            target = (seat + 1 + k) % 4
            if target == g[F_DECLARER]:  # only doubles of the declarer count
                owed = g[F_OWED + 4 * seat + target]
                g[F_OWED + 4 * seat + target] = owed - 1 if owed > 0 else 0
            g[F_NAMED + seat] |= 1 << target
    g[F_DPOS] += 1
    if g[F_DPOS] == 4 and rp[R_REDOUBLE_PASS]:
        for k in range(3):
            p = g[F_ORDER + k]
            if _redouble_pass_targets(g, p):
                g[F_ORDER + g[F_DLEN]] = p
                g[F_DLEN] += 1
    if g[F_DPOS] < g[F_DLEN]:
        g[F_CUR] = g[F_ORDER + g[F_DPOS]]
    else:
        _start_play(g, c, tab)


@njit(cache=True)
def _start_play(g, c, tab):
    d = g[F_DECLARER]
    g[F_CUR] = d
    g[F_LEADER] = d
    if g[F_CONTRACT] == DOMINO_CONTRACT:
        g[F_PHASE] = DOMINO
        rank = g[F_RANK]
        playable = U0
        for s in range(4):
            playable |= _bit(13 * s + rank)
            tab[T_PLAYABLE, 13 * s + rank] = 1.0
        c[K_PLAYABLE] = playable
    else:
        g[F_PHASE] = TRICKS


@njit(cache=True)
def _apply_trick_card(g, c, tab, preset, rp, card, reward):
    seat = g[F_CUR]
    b = _bit(card)
    c[K_HANDS + seat] ^= b
    c[K_PLAYED + seat] |= b
    c[K_TRICK] |= b
    g[F_TRICK + seat] = card
    tab[T_HANDS + seat, card] = 0.0
    tab[T_PLAYED + seat, card] = 1.0
    tab[T_TRICK + seat, card] = 1.0
    suit = card // 13
    if g[F_TSIZE] == 0:
        g[F_LED] = suit
        g[F_WIN_SEAT] = seat
        g[F_WIN_CARD] = card
    else:
        win = g[F_WIN_CARD]
        if suit != g[F_LED]:  # did not follow: void in the led suit, for all to see
            g[F_VOIDS + seat] |= 1 << g[F_LED]
        if (suit == win // 13 and card > win) or (suit == g[F_TRUMP] and win // 13 != suit):
            g[F_WIN_SEAT] = seat
            g[F_WIN_CARD] = card
    g[F_TSIZE] += 1
    if g[F_TSIZE] < 4:
        g[F_CUR] = (seat + 1) % 4
        return 0
    return _finish_trick(g, c, tab, preset, rp, reward)


@njit(cache=True)
def _finish_trick(g, c, tab, preset, rp, reward):
    winner = g[F_WIN_SEAT]
    cards = c[K_TRICK]
    contract = g[F_CONTRACT]
    c[K_TAKEN + winner] |= cards
    for p in range(4):
        tab[T_TAKEN + winner, g[F_TRICK + p]] = 1.0
    g[F_WON + winner] += 1
    n = g[F_TRICK_NO]
    over = n == 12
    pts = F_POINTS + winner
    if contract == NO_TRICKS:
        g[pts] += rp[R_NO_TRICKS]
    elif contract == NO_HEARTS:
        hearts = cards & HEARTS_MASK
        if hearts:
            ace = 1 if cards & _bit(ACE_OF_HEARTS) else 0
            g[pts] += rp[R_NO_HEARTS] * (_popcount(hearts) - ace) + rp[R_NO_HEARTS_ACE] * ace
            if rp[R_END_HEARTS]:
                held = c[K_HANDS] | c[K_HANDS + 1] | c[K_HANDS + 2] | c[K_HANDS + 3]
                over = over or (held & HEARTS_MASK) == U0
    elif contract == NO_QUEENS:
        queens = cards & QUEENS_MASK
        if queens:
            g[pts] += rp[R_NO_QUEENS] * _popcount(queens)
            if rp[R_END_QUEENS]:
                held = c[K_HANDS] | c[K_HANDS + 1] | c[K_HANDS + 2] | c[K_HANDS + 3]
                over = over or (held & QUEENS_MASK) == U0
    elif contract == BARBU:
        if cards & _bit(KING_OF_HEARTS):
            g[pts] += rp[R_BARBU]
            over = over or rp[R_END_BARBU] != 0
    elif contract == NO_LAST_TWO:
        if n >= 11:
            g[pts] += rp[R_LAST_TWO + n - 11]
    else:  # Trumps
        g[pts] += rp[R_TRUMPS]
    if over:
        return _finish_hand(g, c, tab, preset, rp, reward)
    g[F_TRICK_NO] = n + 1
    g[F_LEADER] = winner
    g[F_CUR] = winner
    for p in range(4):
        tab[T_TRICK + p, g[F_TRICK + p]] = 0.0
        g[F_TRICK + p] = -1
    c[K_TRICK] = U0
    g[F_TSIZE] = 0
    g[F_LED] = -1
    return 0


@njit(cache=True)
def _apply_domino(g, c, tab, preset, rp, action, reward):
    seat = g[F_CUR]
    if action != PASS_ACTION:
        b = _bit(action)
        c[K_HANDS + seat] ^= b
        c[K_PLAYED + seat] |= b
        tab[T_HANDS + seat, action] = 0.0
        tab[T_PLAYED + seat, action] = 1.0
        rank = action % 13
        # The card leaves the playable set; its row now reaches one rank further.
        c[K_PLAYABLE] ^= b
        tab[T_PLAYABLE, action] = 0.0
        start = g[F_RANK]
        if rank >= start and rank < 12:
            c[K_PLAYABLE] |= b << U1
            tab[T_PLAYABLE, action + 1] = 1.0
        if rank <= start and rank > 0:
            c[K_PLAYABLE] |= b >> U1
            tab[T_PLAYABLE, action - 1] = 1.0
        if not c[K_HANDS + seat]:
            g[F_OUT + g[F_NOUT]] = seat
            g[F_NOUT] += 1
            if g[F_NOUT] == 3:
                last = 0
                while not c[K_HANDS + last]:
                    last += 1
                g[F_OUT + 3] = last
                for place in range(4):
                    g[F_POINTS + g[F_OUT + place]] = rp[R_DOMINO + place]
                return _finish_hand(g, c, tab, preset, rp, reward)
    # Next seat to the left that still holds cards.
    nxt = (seat + 1) % 4
    while not c[K_HANDS + nxt]:
        nxt = (nxt + 1) % 4
    g[F_CUR] = nxt
    return 0


@njit(cache=True)
def _finish_hand(g, c, tab, preset, rp, reward):
    """Settle the hand from the raw scores in F_POINTS (SPEC A6) into ``reward``; start
    the next hand, or end the game (returns 2)."""
    settled = np.empty(4, dtype=np.int64)
    for p in range(4):
        settled[p] = g[F_POINTS + p]
    for i in range(4):
        for j in range(i + 1, 4):
            k = ((g[F_NAMED + i] >> j) & 1) + ((g[F_NAMED + j] >> i) & 1)
            if k:
                d = k * (g[F_POINTS + i] - g[F_POINTS + j])
                settled[i] += d
                settled[j] -= d
    for p in range(4):
        g[F_SCORES + p] += settled[p]
        reward[p] = settled[p]
    g[F_HAND] += 1
    if g[F_HAND] == 28:
        g[F_PHASE] = GAME_OVER
        g[F_CUR] = -1
        return 2
    _start_hand(g, c, tab, preset, rp)
    return 1


# ---------------------------------------------------------------------- observation and mask


@njit(cache=True)
def _write_decision(g, c, tab, hb, rp, obs, mask):
    """Cache the legal set of the seat to act, and write its mask and observation."""
    lo, hi = _legal(g, c, rp)
    c[K_LEGAL_LO] = lo
    c[K_LEGAL_HI] = hi
    mask[:] = False
    while lo:
        mask[_lowest(lo)] = True
        lo &= lo - U1
    while hi:
        mask[64 + _lowest(hi)] = True
        hi &= hi - U1
    _write_obs(g, c, tab, hb, rp, g[F_CUR], obs)


@njit(cache=True)
def _write_obs(g, c, tab, hb, rp, seat, out):
    """``seat``'s observation (ObservationEncoder.observe) into ``out``."""
    # Card rows, gathered from the absolute table in the observer's seat order.
    out[O_HAND : O_HAND + 52] = tab[T_HANDS + seat]
    for r in range(4):
        p = (seat + r) & 3
        out[O_TRICK + 52 * r : O_TRICK + 52 * r + 52] = tab[T_TRICK + p]
        out[O_PLAYED + 52 * r : O_PLAYED + 52 * r + 52] = tab[T_PLAYED + p]
        out[O_TAKEN + 52 * r : O_TAKEN + 52 * r + 52] = tab[T_TAKEN + p]
    out[O_PLAYABLE : O_PLAYABLE + 52] = tab[T_PLAYABLE]
    # The hand-level block, rebuilt when stale.
    if (g[F_DIRTY] >> seat) & 1:
        _hand_block(g, rp, seat, hb[seat])
        g[F_DIRTY] &= ~(1 << seat)
    out[O_HAND_BLOCK:O_STEP_BLOCK] = hb[seat]
    _step_block(g, c, seat, out)


@njit(cache=True)
def _hand_block(g, rp, seat, block):
    """phase ... game_scores (ObservationEncoder._hand_block)."""
    block[:] = 0.0
    phase = g[F_PHASE]
    block[H_PHASE + phase] = 1.0
    block[H_HAND_NO + min(g[F_HAND], 27)] = 1.0
    if phase < GAME_OVER:
        block[H_DECLARER + ((g[F_DECLARER] - seat) & 3)] = 1.0
        if g[F_CONTRACT] >= 0:
            block[H_CONTRACT + g[F_CONTRACT]] = 1.0
        if g[F_TRUMP] >= 0:
            block[H_TRUMP + g[F_TRUMP]] = 1.0
        if g[F_RANK] >= 0:
            block[H_RANK + g[F_RANK]] = 1.0
        for i in range(4):
            named = g[F_NAMED + ((seat + i) & 3)]
            for j in range(4):
                if (named >> ((seat + j) & 3)) & 1:
                    block[H_DOUBLED + 4 * i + j] = 1.0
        done = g[F_DLEN] if phase > DOUBLE else g[F_DPOS] if phase == DOUBLE else 0
        for k in range(done):
            block[H_DONE + ((g[F_ORDER + k] - seat) & 3)] = 1.0
    m = rp[R_MIN_DOUBLES]
    for i in range(4):
        p = (seat + i) & 3
        left = g[F_LEFT + p]
        for k in range(7):
            if (left >> k) & 1:
                block[H_LEFT + 7 * i + k] = 1.0
        if m:
            for j in range(4):
                block[H_OWED + 4 * i + j] = g[F_OWED + 4 * p + ((seat + j) & 3)] / m
        block[H_SCORES + i] = g[F_SCORES + p] / 100.0


@njit(cache=True)
def _step_block(g, c, seat, out):
    """to_act ... voids (ObservationEncoder._step_block)."""
    out[O_STEP_BLOCK:OBS_DIM] = 0.0
    phase = g[F_PHASE]
    if phase < GAME_OVER:
        out[O_TO_ACT + ((g[F_CUR] - seat) & 3)] = 1.0
    if phase == TRICKS:
        out[O_LEADER + ((g[F_LEADER] - seat) & 3)] = 1.0
        out[O_TRICK_NO + g[F_TRICK_NO]] = 1.0
    for i in range(4):
        p = (seat + i) & 3
        out[O_WON + i] = g[F_WON + p] / 13.0
        out[O_POINTS + i] = g[F_POINTS + p] / 10.0
        out[O_CARDS_LEFT + i] = _popcount(c[K_HANDS + p]) / 13.0
        v = g[F_VOIDS + p]
        for s in range(4):
            if (v >> s) & 1:
                out[O_VOIDS + 4 * i + s] = 1.0
    for k in range(g[F_NOUT]):
        out[O_PLACE + 4 * ((g[F_OUT + k] - seat) & 3) + k] = 1.0


# ---------------------------------------------------------------------- batch entry points


@njit(cache=True)
def reset_games(ints, cards, table, hblock, preset, n_preset, first, rp, obs, mask, seat):
    """Start a new game in every slot and write its first decision."""
    for i in range(ints.shape[0]):
        g = ints[i]
        c = cards[i]
        _new_game(g, c, table[i], preset[i], n_preset[i], first[i], rp)
        _write_decision(g, c, table[i], hblock[i], rp, obs[i], mask[i])
        seat[i] = g[F_CUR]


@njit(cache=True)
def first_illegal(cards, actions):
    """Index of the first game whose action is not legal, or -1."""
    for i in range(cards.shape[0]):
        if not _is_legal(cards[i], actions[i]):
            return i
    return -1


@njit(cache=True)
def step_games(ints, cards, table, hblock, preset, rp, actions, obs, mask, seat, rewards, dones, hand_over,
               final_scores, lengths):
    """Apply every game's (legal) action; a finished game is reset at once (dealt from
    its slot's stream, first declarer drawn), and every slot's next decision written."""
    for i in range(ints.shape[0]):
        g = ints[i]
        c = cards[i]
        tab = table[i]
        reward = rewards[i]
        reward[:] = 0.0
        status = _apply(g, c, tab, preset[i], rp, actions[i], reward)
        hand_over[i] = status > 0
        dones[i] = status == 2
        if status == 2:
            for p in range(4):
                final_scores[i, p] = g[F_SCORES + p]
            lengths[i] = g[F_DECISIONS]
            _new_game(g, c, tab, preset[i], 0, -1, rp)
        _write_decision(g, c, tab, hblock[i], rp, obs[i], mask[i])
        seat[i] = g[F_CUR]


@njit(cache=True)
def other_hands(ints, table, out):
    """Per game, the hands of the three players other than the seat to act, relative
    seats 1, 2, 3 (the extra rows of ObservationEncoder.privileged)."""
    for i in range(ints.shape[0]):
        s = ints[i, F_CUR]
        for k in range(3):
            out[i, 52 * k : 52 * k + 52] = table[i, T_HANDS + ((s + 1 + k) & 3)]
