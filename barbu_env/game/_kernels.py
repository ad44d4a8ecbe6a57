"""Numba kernels: the rules (docs/rules.md) and the observation, implemented once, over
games held as structure-of-arrays, for the batched engine (``barbu_env.game.vector``, B games)
and for ``barbu_env.game.engine.BarbuState`` (one game, row 0 of arrays of the same shapes,
stepped by the ``game_*`` entry points at the end of this file).

One function per step of the rules (``_legal_trick_cards``, ``_apply_double``,
``_finish_trick`` ...). The rules arrive as ``rp``, an int64 array of the switches
(``R_*`` below, built by ``rules_params``). The observation layout (``O_*``, ``H_*``),
the action ids, the phases, contracts and card masks are taken from
``observation.OFFSETS``, ``actions``, ``constants`` (phases ``PH_*``, contracts ``C_*``,
refusal codes ``RF_*``) and ``cards``: numba freezes module-level numbers into the
compiled code. Its disk cache notices a change to this file only, so this module checks
on import that the compiled numbers (``compiled_constants``) are the current ones
(``FROZEN``) and, if not, drops the cache and compiles afresh (``_bits.refresh_stale_cache``,
the policy of every kernel module): a cached compilation never disagrees with the layout.
Bit helpers and the splitmix64 mix come from ``_bits``.

Why an action is illegal (``refusal``, codes ``constants.Refusal``) is decided next to the
legality functions, case by case as they decide. ``resume_position`` completes a position
built from an observation (``barbu_env.game.position``) with the functions play uses.

State of game i:

* ``ints[i, F_*]`` (int64): the scalar fields and small per-seat arrays (``F_*`` below),
  the record of the last finished hand (``F_REC_*``), and the record of the hand under
  way for the information state: each card's place in the order of play and each
  doubling turn's choice (``F_PLAY_INDEX``, ``F_DOUBLE_CHOICE``; 0 = none).
* ``cards[i, K_*]`` (uint64): card sets, one 52-bit set per entry, plus the cached
  legal-action set of the seat to act (85 bits as two words) and the slot's random
  stream (splitmix64 state; ``BarbuState`` presets all 28 deals instead).
* ``hblock[i, seat]`` (float32 [4, 132]): each seat's hand-level block of the
  observation (phase ... game_scores: 131 values and a zero pad, so that it copies as
  66 uint64 words through ``hb64``, the same memory), rebuilt only when
  ``ints[i, F_DIRTY]`` marks it stale: after a declaration, trump, starting rank or
  doubling turn, when a hand starts and when the game ends.

An observation is written whole at every decision: its 18 card rows straight from the
card sets (``_write_row``), the cached hand-level block, the per-decision block. Into a
buffer as wide as the information state (``observation.INFO_DIM`` columns) the same
entry points also write the hand's record after it (``_write_record``): the batched
engine and ``BarbuState.information_state`` choose by the buffer they pass.

Every function takes the whole batch and a game index ``i`` and the kernels are built
with ``_nrt=False`` (no reference counting; they allocate nothing): per-game array views
passed between functions cost more in atomic reference counts than the rules.

Card sets are uint64 and every constant mixed with them is a ``np.uint64``: numba, like
numpy, turns ``uint64 op int64`` into float64.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import actions, observation
from ._bits import SPLITMIX_GAMMA, U0, U1, bit, kernel, lowest, popcount, refresh_stale_cache, splitmix64
from .cards import ACE_OF_HEARTS, HEARTS, HEARTS_MASK, KING_OF_HEARTS, NUM_CARDS, QUEENS_MASK, SUIT_MASK
from .constants import NUM_HANDS, Contract, Phase, Refusal
from .observation import OFFSETS

# ---------------------------------------------------------------------- constants

SUIT_BITS = np.uint64(SUIT_MASK[0])
HEARTS_BITS = np.uint64(HEARTS_MASK)
ALL_CARDS = np.uint64((1 << NUM_CARDS) - 1)
QUEENS_BITS = np.uint64(QUEENS_MASK)

# What applying an action ended (``_apply``, ``game_step``): nothing, a hand, or the game.
ST_PLAYING, ST_HAND_OVER, ST_GAME_OVER = 0, 1, 2

# Phases (constants.Phase) and contracts (constants.Contract), as plain ints.
PH_DECLARE, PH_TRUMP, PH_DOMINO_RANK, PH_DOUBLE, PH_TRICKS, PH_DOMINO, PH_GAME_OVER = (int(p) for p in Phase)
C_NO_TRICKS, C_NO_HEARTS, C_NO_QUEENS, C_BARBU, C_NO_LAST_TWO, C_TRUMPS, C_DOMINO = (int(x) for x in Contract)

# Refusal codes (constants.Refusal), as plain ints.
(
    RF_LEGAL,
    RF_NO_SUCH_ACTION,
    RF_GAME_OVER,
    RF_WRONG_PHASE,
    RF_NOT_HELD,
    RF_FOLLOW_SUIT,
    RF_OVERTRUMP,
    RF_RUFF,
    RF_HEART_LEAD,
    RF_KING_FIRST,
    RF_NOT_ON_LAYOUT,
    RF_MUST_PLACE,
    RF_ALREADY_DECLARED,
    RF_MUST_DOUBLE_DECLARER,
    RF_DECLARER_REDOUBLES_ONLY,
    RF_DECLARER_ONLY_CONTRACT,
    RF_DECLARER_ONLY_RULE,
    RF_REDOUBLE_PASS_ONLY,
) = (int(r) for r in Refusal)

# Action ids (barbu_env.game.actions).
DECLARE_OFFSET, TRUMP_OFFSET, RANK_OFFSET = actions.DECLARE_OFFSET, actions.TRUMP_OFFSET, actions.RANK_OFFSET
DOUBLE_OFFSET, PASS_ACTION, NUM_ACTIONS = actions.DOUBLE_OFFSET, actions.PASS_ACTION, actions.NUM_ACTIONS
# The legal set is two words: lo holds actions 0-63, hi actions 64-84 (bit a - 64).
LO_TRUMP_BITS = np.uint64(0xF << TRUMP_OFFSET)
LO_RANK_BIT = np.uint64(1 << 63)  # rank "2" (action 63); ranks 3..A are hi bits 0-11
HI_RANK_BITS = np.uint64(0xFFF)
HI_DOUBLE_SHIFT = np.uint64(DOUBLE_OFFSET - 64)  # 12
HI_PASS_BIT = np.uint64(1 << (PASS_ACTION - 64))  # bit 20

# Rules switches: rp[R_*] (see rules_params).
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

# Per-game int fields: ints[i, F_*] (engine.BarbuState's fields of the same meaning).
F_PHASE = 0  # Phase
F_CUR = 1  # seat to act; -1 once the game is over
F_DECLARER = 2  # seat declaring this hand
F_FIRST = 3  # seat declaring hand 0
F_HAND = 4  # hand number 0..27; once the game is over, the hands played (28, or the episode's hands)
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
# The record of the last finished hand (written by _finish_hand; the engine's HandResult).
F_REC_HAND = 76  # its hand number
F_REC_DECLARER = 77
F_REC_CONTRACT = 78
F_REC_TRUMP = 79  # -1 unless Trumps
F_REC_RANK = 80  # -1 unless Domino
F_REC_NOUT = 81  # Domino: players out before the last one (3), else 0
F_REC_NAMED = 82  # +4: F_NAMED at the end of the hand (its doubling levels)
F_REC_RAW = 86  # +4: raw scores
F_REC_SETTLED = 90  # +4: settled scores
F_REC_WON = 94  # +4: tricks won
F_REC_OUT = 98  # +4: Domino finishing order (F_REC_NOUT entries)
# The episode: the game ends when F_HAND reaches a multiple of this (constants.EPISODE_HANDS: 28, 7
# or 1); a property of the slot, like its random stream: kept by new games and loaded positions.
F_EPISODE = 102
# The record of the hand under way, for the information state (reset by _start_hand; 0 = none, so
# that a position built from an observation, whose fields start at 0, has an empty record).
F_PLAY_INDEX = 103  # +52: per card, 1 + its index in this hand's order of play, 0 if not played
F_DOUBLE_CHOICE = 155  # +7: per doubling turn (parallel to F_ORDER), 1 + the choice b (action 76 + b)
# Who redoubled whom, for the record of the hand's doubles (a double of a seat that had already named the
# actor is a redouble): the hand under way (reset by _start_hand) and the last finished hand.
F_REDOUBLED = 162  # +4: per seat, 4-bit set of the seats it redoubled this hand (a subset of F_NAMED)
F_REC_REDOUBLED = 166  # +4: F_REDOUBLED at the end of the last finished hand
NUM_INT_FIELDS = 170

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
K_REC_DEALT = 21  # +4: the four hands as dealt in the last finished hand
K_EXCL = 25  # +4: per seat, cards the rules have shown it does not hold (this hand)
K_PASSES = 29  # +4: per seat, Domino passes this hand: bit k set if it passed with k cards placed
NUM_CARD_FIELDS = 33

# Observation offsets, from observation.OFFSETS: start of each slice, O_* absolute and
# H_* within the hand-level block (phase ... game_scores), which the kernels cache per
# seat and copy as uint64 words (hence the even offsets checked below).
O_HAND, O_TRICK, O_PLAYED, O_TAKEN, O_PLAYABLE, O_EXCL = (
    OFFSETS[n][0] for n in ("hand", "trick", "played", "taken", "domino_playable", "excluded")
)
O_HAND_BLOCK = OFFSETS["phase"][0]  # start of the hand-level block
O_STEP_BLOCK = OFFSETS["to_act"][0]  # start of the per-decision block
H_PHASE, H_CONTRACT, H_TRUMP, H_RANK, H_DECLARER = (
    OFFSETS[n][0] - O_HAND_BLOCK for n in ("phase", "contract", "trump", "domino_rank", "declarer")
)
H_DOUBLED, H_DONE, H_OWED, H_LEFT, H_HAND_NO, H_SCORES = (
    OFFSETS[n][0] - O_HAND_BLOCK
    for n in ("doubled", "doubling_done", "owed", "contracts_left", "hand_number", "game_scores")
)
HAND_BLOCK_LEN = O_STEP_BLOCK - O_HAND_BLOCK  # 131
HAND_BLOCK_WORDS = (HAND_BLOCK_LEN + 1) // 2  # the block padded to an even length, as uint64 words
O_TO_ACT, O_LEADER, O_TRICK_NO, O_WON, O_POINTS = (
    OFFSETS[n][0] for n in ("to_act", "leader", "trick_number", "tricks_won", "hand_points")
)
O_PLACE, O_CARDS_LEFT, O_VOIDS = (OFFSETS[n][0] for n in ("domino_place", "cards_left", "voids"))
OBS_DIM = observation.OBS_DIM
# The information state's slices after the observation (absolute offsets).
INFO_DIM = observation.INFO_DIM
O_DEALT, O_PLAY_ORDER, O_DOUBLING_TURNS, O_DOMINO_PASSES = (
    observation.INFO_OFFSETS[n][0] for n in ("dealt", "play_order", "doubling_turns", "domino_passes")
)
MAX_DOUBLING_TURNS = observation.MAX_DOUBLING_TURNS
if (
    O_DEALT != OBS_DIM
    or O_DEALT % 2
    or O_PLAY_ORDER % 2
    or O_DOUBLING_TURNS % 2
    or O_DOMINO_PASSES % 2  # card rows and zeroed ranges are written as words
    or O_PLAY_ORDER != O_DEALT + NUM_CARDS
    or O_DOUBLING_TURNS != O_PLAY_ORDER + NUM_CARDS * NUM_CARDS
    or O_DOMINO_PASSES != O_DOUBLING_TURNS + 8 * MAX_DOUBLING_TURNS
    or INFO_DIM != O_DOMINO_PASSES + 4 * NUM_CARDS
    or MAX_DOUBLING_TURNS != 7
):
    raise ImportError(f"barbu_env.game._kernels cannot write this information-state layout: {observation.INFO_OFFSETS}")
if (
    O_HAND % 2
    or NUM_CARDS % 2
    or O_HAND_BLOCK % 2  # card rows and the hand-level block copy as words
    or O_HAND_BLOCK != OFFSETS["excluded"][1]
    or OFFSETS["game_scores"][1] != O_STEP_BLOCK
    or O_HAND_BLOCK + 2 * HAND_BLOCK_WORDS > OBS_DIM
):
    raise ImportError(f"barbu_env.game._kernels cannot write this observation layout: {OFFSETS}")

#: Every number above that the kernels freeze into their compiled code, for
#: ``compiled_constants``: numba's disk cache notices a change to this file, not to the
#: modules these numbers come from.
FROZEN = (
    NUM_HANDS,
    HEARTS,
    KING_OF_HEARTS,
    ACE_OF_HEARTS,
    int(HEARTS_BITS),
    int(QUEENS_BITS),
    int(SUIT_BITS),
    PH_DECLARE,
    PH_TRUMP,
    PH_DOMINO_RANK,
    PH_DOUBLE,
    PH_TRICKS,
    PH_DOMINO,
    PH_GAME_OVER,
    C_NO_TRICKS,
    C_NO_HEARTS,
    C_NO_QUEENS,
    C_BARBU,
    C_NO_LAST_TWO,
    C_TRUMPS,
    C_DOMINO,
    DECLARE_OFFSET,
    TRUMP_OFFSET,
    RANK_OFFSET,
    DOUBLE_OFFSET,
    PASS_ACTION,
    NUM_ACTIONS,
    O_HAND,
    O_TRICK,
    O_PLAYED,
    O_TAKEN,
    O_PLAYABLE,
    O_EXCL,
    O_HAND_BLOCK,
    O_STEP_BLOCK,
    H_PHASE,
    H_CONTRACT,
    H_TRUMP,
    H_RANK,
    H_DECLARER,
    H_DOUBLED,
    H_DONE,
    H_OWED,
    H_LEFT,
    H_HAND_NO,
    H_SCORES,
    HAND_BLOCK_LEN,
    HAND_BLOCK_WORDS,
    O_TO_ACT,
    O_LEADER,
    O_TRICK_NO,
    O_WON,
    O_POINTS,
    O_PLACE,
    O_CARDS_LEFT,
    O_VOIDS,
    OBS_DIM,
    INFO_DIM,
    O_DEALT,
    O_PLAY_ORDER,
    O_DOUBLING_TURNS,
    O_DOMINO_PASSES,
    MAX_DOUBLING_TURNS,
    NUM_CARDS,
    *(int(r) for r in Refusal),
)

# _DOUBLE_BITS[allowed, required]: 8-bit set of the doubling choices b (action 76 + b)
# naming a subset of ``allowed`` that contains ``required`` (3-bit relative seat sets).
DOUBLE_BITS = np.array(
    [[sum(1 << b for b in range(8) if b & ~a == 0 and b & r == r) for r in range(8)] for a in range(8)],
    dtype=np.uint64,
)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_BYTE = np.uint64(0xFF)
_ONE_F32 = np.uint64(0x3F800000)  # the bits of float32 1.0
#: _ROW_LUT[b]: the 8 float32 values (0.0 or 1.0) of the bits of byte b, seen as 4 uint64.
_ROW_LUT = (((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float32)).view(np.uint64)
#: _THIRTEENTHS[n] = float32(n / 13), as the encoder rounds it.
_THIRTEENTHS = np.array([n / 13.0 for n in range(14)], dtype=np.float32)

#: Every function here: compiled on first use and cached on disk, without reference
#: counting (the module docstring says why).
_kernel = kernel


@_kernel
def compiled_constants():
    """``FROZEN`` as the compiled code holds it: loaded from numba's disk cache if this
    file was compiled before, so it differs from ``FROZEN`` when the cache is stale."""
    return FROZEN


def check_compiled_constants() -> None:
    """The kernels' compiled numbers (possibly from numba's disk cache) are the current
    layout, action ids and the rest of ``FROZEN``; numba's cache notices changes to this
    file only, not to the modules these numbers come from: a stale cache is dropped and
    every kernel here compiles afresh (``_bits.refresh_stale_cache``). Run on import."""
    refresh_stale_cache(globals(), compiled_constants, FROZEN)


check_compiled_constants()


def rules_params(rules) -> np.ndarray:
    """The switches of ``rules`` (a ``Rules``) as the kernels' int64 array (indices ``R_*``)."""
    rp = np.zeros(NUM_RULE_PARAMS, dtype=np.int64)
    rp[R_EVERY_HAND] = rules.rotation == "every_hand"
    rp[R_OVERTRUMP] = rules.trumps_must_overtrump
    rp[R_RUFF] = rules.trumps_must_ruff
    rp[R_KING_FIRST] = rules.barbu_king_first_chance
    rp[R_END_HEARTS] = rules.end_no_hearts_early
    rp[R_END_QUEENS] = rules.end_no_queens_early
    rp[R_END_BARBU] = rules.end_barbu_early
    rp[R_DECLARER_ONLY] = rules.doubling_targets == "declarer_only"
    rp[R_REDOUBLE_PASS] = rules.redouble_pass
    rp[R_MIN_DOUBLES] = rules.min_declarer_doubles
    rp[R_NO_TRICKS] = rules.no_tricks_points
    rp[R_NO_HEARTS] = rules.no_hearts_points
    rp[R_NO_HEARTS_ACE] = rules.no_hearts_ace_points
    rp[R_NO_QUEENS] = rules.no_queens_points
    rp[R_BARBU] = rules.barbu_points
    rp[R_LAST_TWO : R_LAST_TWO + 2] = rules.no_last_two_points
    rp[R_TRUMPS] = rules.trumps_points
    rp[R_DOMINO : R_DOMINO + 4] = rules.domino_scores
    return rp


# ---------------------------------------------------------------------- bits


@_kernel
def _suit_mask(s):
    return SUIT_BITS << np.uint64(13 * s)


@_kernel
def _relative_set(seat, absolute):
    """A 4-bit absolute seat set as the 3-bit set relative to ``seat`` (bit 0 = left)."""
    return ((absolute | absolute << 4) >> (seat + 1)) & 7


# ---------------------------------------------------------------------- random deals


@_kernel
def _next_random(cards, i):
    """Next 64-bit output of game slot i's splitmix64 stream (Steele et al. 2014)."""
    z = cards[i, K_RNG] + SPLITMIX_GAMMA
    cards[i, K_RNG] = z
    return splitmix64(z)


@_kernel
def _below(cards, i, n):
    """A uniform int in [0, n), n < 2**32: Lemire's multiply-shift with rejection
    (Lemire 2019, "Fast random integer generation in an interval", algorithm 5)."""
    un = np.uint64(n)
    m = (_next_random(cards, i) >> np.uint64(32)) * un
    low = m & _LOW32
    if low < un:
        threshold = (_TWO32 - un) % un
        while low < threshold:
            m = (_next_random(cards, i) >> np.uint64(32)) * un
            low = m & _LOW32
    return np.int64(m >> np.uint64(32))


@_kernel
def _random_deal(cards, i):
    """Deal the 52 cards into cards[i, K_DEALT:K_DEALT+4]: each card in turn goes to a seat
    drawn with probability proportional to the room left in its hand, which makes
    every deal equally likely."""
    room0 = room1 = room2 = 13
    h0 = h1 = h2 = h3 = U0
    for card in range(52):
        r = _below(cards, i, 52 - card)
        b = bit(card)
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
    cards[i, K_DEALT] = h0
    cards[i, K_DEALT + 1] = h1
    cards[i, K_DEALT + 2] = h2
    cards[i, K_DEALT + 3] = h3


# ---------------------------------------------------------------------- game and hand set-up
#
# Argument names: ints [B, F], cards [B, K], preset [B, 28, 4], rp the rules,
# rewards [B, 4], i the game.


@_kernel
def _new_game(ints, cards, preset, rp, i, n_preset, first):
    """A new game in slot i: ``first`` declarer (-1: drawn from the slot's stream),
    ``n_preset`` deals taken from ``preset[i]``, the rest dealt from the stream."""
    if first < 0:
        first = _below(cards, i, 4)
    ints[i, F_FIRST] = first
    ints[i, F_PRESET] = n_preset
    ints[i, F_HAND] = 0
    ints[i, F_DECISIONS] = 0
    m = rp[R_MIN_DOUBLES]
    for p in range(4):
        ints[i, F_LEFT + p] = 0x7F
        ints[i, F_SCORES + p] = 0
        for d in range(4):
            ints[i, F_OWED + 4 * p + d] = 0 if p == d else m
    _start_hand(ints, cards, preset, rp, i)


@_kernel
def _start_hand(ints, cards, preset, rp, i):
    h = ints[i, F_HAND]
    if h < ints[i, F_PRESET]:
        for p in range(4):
            cards[i, K_DEALT + p] = preset[i, h, p]
    else:
        _random_deal(cards, i)
    if rp[R_EVERY_HAND]:
        d = (ints[i, F_FIRST] + h) % 4
    else:
        d = (ints[i, F_FIRST] + h // 7) % 4
    ints[i, F_DECLARER] = d
    ints[i, F_PHASE] = PH_DECLARE
    ints[i, F_CUR] = d
    ints[i, F_CONTRACT] = -1
    ints[i, F_TRUMP] = -1
    ints[i, F_RANK] = -1
    ints[i, F_DPOS] = 0
    ints[i, F_DLEN] = 0
    ints[i, F_TRICK_NO] = 0
    ints[i, F_LEADER] = d
    ints[i, F_TSIZE] = 0
    ints[i, F_LED] = -1
    ints[i, F_WIN_SEAT] = -1
    ints[i, F_WIN_CARD] = -1
    ints[i, F_NOUT] = 0
    ints[i, F_DIRTY] = 0xF
    for p in range(4):
        ints[i, F_NAMED + p] = 0
        ints[i, F_REDOUBLED + p] = 0
        ints[i, F_WON + p] = 0
        ints[i, F_POINTS + p] = 0
        ints[i, F_VOIDS + p] = 0
        ints[i, F_TRICK + p] = -1
        cards[i, K_HANDS + p] = cards[i, K_DEALT + p]
        cards[i, K_PLAYED + p] = U0
        cards[i, K_TAKEN + p] = U0
        cards[i, K_EXCL + p] = U0
        cards[i, K_PASSES + p] = U0
    cards[i, K_TRICK] = U0
    cards[i, K_PLAYABLE] = U0
    for k in range(NUM_CARDS):
        ints[i, F_PLAY_INDEX + k] = 0
    for t in range(MAX_DOUBLING_TURNS):
        ints[i, F_DOUBLE_CHOICE + t] = 0


# ---------------------------------------------------------------------- legality


@_kernel
def _legal(ints, cards, rp, i):
    """The legal actions of the seat to act as (lo, hi): actions 0-63 and 64-84."""
    phase = ints[i, F_PHASE]
    if phase == PH_TRICKS:
        return _legal_trick_cards(ints, cards, rp, i), U0
    if phase == PH_DOMINO:
        placeable = cards[i, K_HANDS + ints[i, F_CUR]] & cards[i, K_PLAYABLE]
        if placeable:
            return placeable, U0
        return U0, HI_PASS_BIT
    if phase == PH_DOUBLE:
        return U0, _legal_doubles(ints, rp, i) << HI_DOUBLE_SHIFT
    if phase == PH_DECLARE:
        return np.uint64(ints[i, F_LEFT + ints[i, F_DECLARER]]) << np.uint64(DECLARE_OFFSET), U0
    if phase == PH_TRUMP:
        return LO_TRUMP_BITS, U0
    if phase == PH_DOMINO_RANK:
        return LO_RANK_BIT, HI_RANK_BITS
    return U0, U0


@_kernel
def _legal_trick_cards(ints, cards, rp, i):
    return _trick_rule(ints, cards, rp, i)[3]


@_kernel
def _trick_rule(ints, cards, rp, i):
    """Game i's trick-play rule for the seat to act, as two narrowing steps of its hand:
    ``(hand, first, why_first, legal, why_legal)``. ``legal`` is the legal set; a held card
    outside ``first`` is refused for ``why_first``, one in ``first`` but not in ``legal``
    for ``why_legal`` (``Refusal`` codes). Legality and the reason for a refusal are read
    from this one function (``_legal_trick_cards``, ``_trick_card_refusal``)."""
    hand = cards[i, K_HANDS + ints[i, F_CUR]]
    contract = ints[i, F_CONTRACT]
    if ints[i, F_TSIZE] == 0:
        # Leading: No Hearts and Barbu ban a heart lead unless the hand is all hearts.
        if contract == C_NO_HEARTS or contract == C_BARBU:
            rest = hand & ~HEARTS_BITS
            if rest:
                return hand, rest, RF_HEART_LEAD, rest, RF_LEGAL
        return hand, hand, RF_LEGAL, hand, RF_LEGAL
    led = ints[i, F_LED]
    follow = hand & _suit_mask(led)
    if contract == C_TRUMPS:
        return _trumps_rule(ints, cards, rp, i, hand, follow)
    if contract == C_BARBU and rp[R_KING_FIRST] and hand & bit(KING_OF_HEARTS):
        # K♥ at the first chance: when void in the led suit, and on a heart lead once A♥
        # is in the trick.
        if not follow or (led == HEARTS and cards[i, K_TRICK] & bit(ACE_OF_HEARTS)):
            king = bit(KING_OF_HEARTS)
            return hand, king, RF_KING_FIRST, king, RF_LEGAL
    # Follow suit if able, else any card.
    if follow:
        return hand, follow, RF_FOLLOW_SUIT, follow, RF_LEGAL
    return hand, hand, RF_LEGAL, hand, RF_LEGAL


@_kernel
def _trumps_rule(ints, cards, rp, i, hand, follow):
    """``_trick_rule`` in Trumps, after the lead."""
    trump = ints[i, F_TRUMP]
    trumps_held = hand & _suit_mask(trump)
    top = _top_trump(cards, i, trump)
    higher = trumps_held & _higher_trumps(trump, top)  # all held trumps if the trick has none
    if ints[i, F_LED] == trump:
        # Trump led: follow with a trump, beating the trick's trumps if able.
        if not trumps_held:
            return hand, hand, RF_LEGAL, hand, RF_LEGAL
        if rp[R_OVERTRUMP] and higher:
            return hand, trumps_held, RF_FOLLOW_SUIT, higher, RF_OVERTRUMP
        return hand, trumps_held, RF_FOLLOW_SUIT, trumps_held, RF_LEGAL
    # Plain suit led: follow suit if able.
    if follow:
        return hand, follow, RF_FOLLOW_SUIT, follow, RF_LEGAL
    if not trumps_held:
        return hand, hand, RF_LEGAL, hand, RF_LEGAL
    if top and rp[R_OVERTRUMP]:
        # A trump is in the trick: beat it if able, else any card at all.
        if higher:
            return hand, higher, RF_OVERTRUMP, higher, RF_LEGAL
        return hand, hand, RF_LEGAL, hand, RF_LEGAL
    # Void: ruff if obliged, else any card.
    if rp[R_RUFF]:
        return hand, trumps_held, RF_RUFF, trumps_held, RF_LEGAL
    return hand, hand, RF_LEGAL, hand, RF_LEGAL


@_kernel
def _top_trump(cards, i, trump):
    """1 + the rank of the highest trump in game i's trick, 0 if it holds none."""
    in_trick = (cards[i, K_TRICK] >> np.uint64(13 * trump)) & SUIT_BITS
    top = 0
    while in_trick:
        top += 1
        in_trick >>= U1
    return top


@_kernel
def _higher_trumps(trump, top):
    """The trumps above every trump in the trick (``top`` from ``_top_trump``): the whole suit if none."""
    return _suit_mask(trump) & ~((U1 << np.uint64(13 * trump + top)) - U1)


@_kernel
def _legal_doubles(ints, rp, i):
    """8-bit set of the legal doubling choices b (actions 76 + b)."""
    seat = ints[i, F_CUR]
    targets, _, required = _double_rule(ints, rp, i)
    return DOUBLE_BITS[_relative_set(seat, targets), _relative_set(seat, required)]


@_kernel
def _double_rule(ints, rp, i):
    """Game i's doubling rule for the seat to act: ``(targets, why_targets, required)``,
    the seats it may name (a seat named outside them is refused for ``why_targets``, a
    ``Refusal`` code) and those it must name (``RF_MUST_DOUBLE_DECLARER``), as absolute
    4-bit sets. Legality and the reason for a refusal are read from this one function
    (``_legal_doubles``, ``_double_refusal``)."""
    seat = ints[i, F_CUR]
    d = ints[i, F_DECLARER]
    if ints[i, F_DPOS] >= 4:
        # Redouble pass: the later players who doubled this seat, not yet redoubled.
        return _redouble_pass_targets(ints, i, seat), RF_REDOUBLE_PASS_ONLY, 0
    if seat == d:
        # Declarer: redouble any of those who doubled them.
        targets = 0
        for p in range(4):
            if (ints[i, F_NAMED + p] >> d) & 1:
                targets |= 1 << p
        return targets, RF_DECLARER_REDOUBLES_ONLY, 0
    if ints[i, F_CONTRACT] >= C_TRUMPS:
        targets, why = 1 << d, RF_DECLARER_ONLY_CONTRACT
    elif rp[R_DECLARER_ONLY]:
        targets, why = 1 << d, RF_DECLARER_ONLY_RULE
    else:
        targets, why = 0xF & ~(1 << seat), RF_LEGAL
    # The obligation: owing as many doubles as the declarer has hands left (this one too).
    hands_left = popcount(np.uint64(ints[i, F_LEFT + d])) + 1
    required = 1 << d if ints[i, F_OWED + 4 * seat + d] >= hands_left else 0
    return targets, why, required


@_kernel
def _redouble_pass_targets(ints, i, seat):
    """Seats acting after ``seat`` in the four turns who doubled (not redoubled) it."""
    k = 0
    while ints[i, F_ORDER + k] != seat:
        k += 1
    targets = 0
    named_by_seat = ints[i, F_NAMED + seat]
    for j in range(k + 1, 4):
        p = ints[i, F_ORDER + j]
        if (ints[i, F_NAMED + p] >> seat) & 1 and not (named_by_seat >> p) & 1:
            targets |= 1 << p
    return targets


# ---------------------------------------------------------------------- refusals
#
# Why an action is not legal (constants.Refusal): the trick and doubling rules above give their
# legal sets with the reason for each step that narrows them (``_trick_rule``, ``_double_rule``),
# so a refusal and the mask come from one function; test_kernel_refusals checks on whole games
# under every preset and switch that the code is LEGAL exactly for the legal actions.


@_kernel
def _refusal(ints, cards, rp, i, action):
    """The ``Refusal`` code of ``action`` for game i's seat to act (``RF_LEGAL`` iff legal)."""
    if action < 0 or action >= NUM_ACTIONS:
        return RF_NO_SUCH_ACTION
    phase = ints[i, F_PHASE]
    if phase == PH_GAME_OVER:
        return RF_GAME_OVER
    if action < DECLARE_OFFSET:
        if phase == PH_TRICKS:
            return _trick_card_refusal(ints, cards, rp, i, action)
        if phase == PH_DOMINO:
            if not cards[i, K_HANDS + ints[i, F_CUR]] & bit(action):
                return RF_NOT_HELD
            return RF_LEGAL if cards[i, K_PLAYABLE] & bit(action) else RF_NOT_ON_LAYOUT
        return RF_WRONG_PHASE
    if action == PASS_ACTION:
        if phase != PH_DOMINO:
            return RF_WRONG_PHASE
        return RF_MUST_PLACE if cards[i, K_HANDS + ints[i, F_CUR]] & cards[i, K_PLAYABLE] else RF_LEGAL
    if action >= DOUBLE_OFFSET:
        return _double_refusal(ints, rp, i, action - DOUBLE_OFFSET) if phase == PH_DOUBLE else RF_WRONG_PHASE
    if action >= RANK_OFFSET:
        return RF_LEGAL if phase == PH_DOMINO_RANK else RF_WRONG_PHASE
    if action >= TRUMP_OFFSET:
        return RF_LEGAL if phase == PH_TRUMP else RF_WRONG_PHASE
    if phase != PH_DECLARE:
        return RF_WRONG_PHASE
    return RF_LEGAL if (ints[i, F_LEFT + ints[i, F_DECLARER]] >> (action - DECLARE_OFFSET)) & 1 else RF_ALREADY_DECLARED


@_kernel
def _trick_card_refusal(ints, cards, rp, i, card):
    """``_refusal`` of a card in trick play, read from ``_trick_rule``."""
    hand, first, why_first, legal, why_legal = _trick_rule(ints, cards, rp, i)
    b = bit(card)
    if not hand & b:
        return RF_NOT_HELD
    if legal & b:
        return RF_LEGAL
    return why_legal if first & b else why_first


@_kernel
def _double_refusal(ints, rp, i, choice):
    """``_refusal`` of the doubling choice ``choice`` (action 76 + choice), read from
    ``_double_rule``."""
    seat = ints[i, F_CUR]
    targets, why_targets, required = _double_rule(ints, rp, i)
    named = 0  # the absolute seats named
    for k in range(3):
        if (choice >> k) & 1:
            named |= 1 << ((seat + 1 + k) % 4)
    if named & ~targets:
        return why_targets
    if required & ~named:
        return RF_MUST_DOUBLE_DECLARER
    return RF_LEGAL


# ---------------------------------------------------------------------- actions


@_kernel
def _apply(ints, cards, preset, rp, rewards, i, action):
    """Apply the (legal) action of game i's seat to act. Returns ST_PLAYING, or
    ST_HAND_OVER if it ended a hand (``rewards[i]`` then holds the settled scores),
    ST_GAME_OVER if it ended the game."""
    ints[i, F_DECISIONS] += 1
    phase = ints[i, F_PHASE]
    if phase == PH_TRICKS:
        return _apply_trick_card(ints, cards, preset, rp, rewards, i, action)
    if phase == PH_DOMINO:
        return _apply_domino(ints, cards, preset, rp, rewards, i, action)
    ints[i, F_DIRTY] = 0xF  # every other decision changes the hand-level block
    if phase == PH_DOUBLE:
        _apply_double(ints, cards, rp, i, action)
    elif phase == PH_DECLARE:
        _apply_declare(ints, i, action)
    elif phase == PH_TRUMP:
        ints[i, F_TRUMP] = action - TRUMP_OFFSET
        _start_doubling(ints, i)
    else:  # PH_DOMINO_RANK
        ints[i, F_RANK] = action - RANK_OFFSET
        _start_doubling(ints, i)
    return ST_PLAYING


@_kernel
def _apply_declare(ints, i, action):
    contract = action - DECLARE_OFFSET
    ints[i, F_CONTRACT] = contract
    ints[i, F_LEFT + ints[i, F_DECLARER]] &= ~(1 << contract)
    if contract == C_TRUMPS:
        ints[i, F_PHASE] = PH_TRUMP
    elif contract == C_DOMINO:
        ints[i, F_PHASE] = PH_DOMINO_RANK
    else:
        _start_doubling(ints, i)


@_kernel
def _start_doubling(ints, i):
    ints[i, F_PHASE] = PH_DOUBLE
    _four_turns(ints, i)
    ints[i, F_DLEN] = 4
    ints[i, F_DPOS] = 0
    ints[i, F_CUR] = ints[i, F_ORDER]


@_kernel
def _four_turns(ints, i):
    """The four doubling turns into F_ORDER: the declarer's left first, the declarer last."""
    d = ints[i, F_DECLARER]
    for k in range(4):
        ints[i, F_ORDER + k] = (d + 1 + k) % 4


@_kernel
def _add_pass_turns(ints, i, start):
    """The redouble-pass turns of the first three turns' seats after index ``start`` that have
    someone to redouble, appended to F_ORDER (F_DLEN grows)."""
    for k in range(start, 3):
        p = ints[i, F_ORDER + k]
        if _redouble_pass_targets(ints, i, p):
            ints[i, F_ORDER + ints[i, F_DLEN]] = p
            ints[i, F_DLEN] += 1


@_kernel
def _apply_double(ints, cards, rp, i, action):
    seat = ints[i, F_CUR]
    rel = action - DOUBLE_OFFSET
    ints[i, F_DOUBLE_CHOICE + ints[i, F_DPOS]] = 1 + rel
    for k in range(3):
        if (rel >> k) & 1:
            target = (seat + 1 + k) % 4
            if target == ints[i, F_DECLARER]:  # only doubles of the declarer count
                owed = ints[i, F_OWED + 4 * seat + target]
                ints[i, F_OWED + 4 * seat + target] = owed - 1 if owed > 0 else 0
            if (ints[i, F_NAMED + target] >> seat) & 1:  # the target had named the actor: a redouble
                ints[i, F_REDOUBLED + seat] |= 1 << target
            ints[i, F_NAMED + seat] |= 1 << target
    ints[i, F_DPOS] += 1
    if ints[i, F_DPOS] == 4 and rp[R_REDOUBLE_PASS]:
        _add_pass_turns(ints, i, 0)
    if ints[i, F_DPOS] < ints[i, F_DLEN]:
        ints[i, F_CUR] = ints[i, F_ORDER + ints[i, F_DPOS]]
    else:
        _start_play(ints, cards, i)


@_kernel
def _start_play(ints, cards, i):
    d = ints[i, F_DECLARER]
    ints[i, F_CUR] = d
    ints[i, F_LEADER] = d
    if ints[i, F_CONTRACT] == C_DOMINO:
        ints[i, F_PHASE] = PH_DOMINO
        rank = ints[i, F_RANK]
        playable = U0
        for s in range(4):
            playable |= bit(13 * s + rank)
        cards[i, K_PLAYABLE] = playable
    else:
        ints[i, F_PHASE] = PH_TRICKS


@_kernel
def _apply_trick_card(ints, cards, preset, rp, rewards, i, card):
    seat = ints[i, F_CUR]
    cards[i, K_EXCL + seat] |= _excluded_by_play(ints, cards, rp, i, card)
    ints[i, F_PLAY_INDEX + card] = 1 + 4 * ints[i, F_TRICK_NO] + ints[i, F_TSIZE]
    b = bit(card)
    cards[i, K_HANDS + seat] ^= b
    cards[i, K_PLAYED + seat] |= b
    cards[i, K_TRICK] |= b
    ints[i, F_TRICK + seat] = card
    suit = card // 13
    if ints[i, F_TSIZE] == 0:
        ints[i, F_LED] = suit
        ints[i, F_WIN_SEAT] = seat
        ints[i, F_WIN_CARD] = card
    else:
        if suit != ints[i, F_LED]:  # did not follow: void in the led suit, for all to see
            ints[i, F_VOIDS + seat] |= 1 << ints[i, F_LED]
        if _beats(card, ints[i, F_WIN_CARD], ints[i, F_TRUMP]):
            ints[i, F_WIN_SEAT] = seat
            ints[i, F_WIN_CARD] = card
    ints[i, F_TSIZE] += 1
    if ints[i, F_TSIZE] < 4:
        ints[i, F_CUR] = (seat + 1) % 4
        return ST_PLAYING
    return _finish_trick(ints, cards, preset, rp, rewards, i)


@_kernel
def _beats(card, win, trump):
    """``card`` takes the trick from ``win``, the card winning it so far (``trump``: -1 if none)."""
    suit = card // 13
    return (suit == win // 13 and card > win) or (suit == trump and win // 13 != suit)


@_kernel
def _excluded_by_play(ints, cards, rp, i, card):
    """The cards that playing ``card`` (legal, not yet applied) shows the seat to act
    does not hold: what it would have had to play instead (docs/rules.md#what-play-reveals)."""
    contract = ints[i, F_CONTRACT]
    suit = card // 13
    if ints[i, F_TSIZE] == 0:
        # A heart lead in No Hearts or Barbu: the hand was all hearts.
        if (contract == C_NO_HEARTS or contract == C_BARBU) and suit == HEARTS:
            return ALL_CARDS & ~HEARTS_BITS
        return U0
    led = ints[i, F_LED]
    out = U0 if suit == led else _suit_mask(led)  # did not follow: void in the led suit
    if contract == C_TRUMPS:
        trump = ints[i, F_TRUMP]
        top = _top_trump(cards, i, trump)
        higher = _higher_trumps(trump, top)
        beats = suit == trump and card % 13 >= top
        if led == trump:
            # A trump led and followed without beating the trick: no higher trump held.
            if suit == trump and rp[R_OVERTRUMP] and not beats:
                out |= higher
        elif suit != led:
            if top and rp[R_OVERTRUMP]:
                if not beats:  # a trump in the trick, not beaten: no higher trump held
                    out |= higher
            elif rp[R_RUFF] and suit != trump:  # obliged to ruff and did not: no trump held
                out |= _suit_mask(trump)
    elif contract == C_BARBU and rp[R_KING_FIRST] and card != KING_OF_HEARTS:
        # K♥ at the first chance: not played when void, or on a heart lead once A♥ is in.
        if suit != led or (led == HEARTS and cards[i, K_TRICK] & bit(ACE_OF_HEARTS)):
            out |= bit(KING_OF_HEARTS)
    return out


@_kernel
def _finish_trick(ints, cards, preset, rp, rewards, i):
    winner = ints[i, F_WIN_SEAT]
    taken = cards[i, K_TRICK]
    contract = ints[i, F_CONTRACT]
    cards[i, K_TAKEN + winner] |= taken
    ints[i, F_WON + winner] += 1
    n = ints[i, F_TRICK_NO]
    over = n == 12
    pts = F_POINTS + winner
    if contract == C_NO_TRICKS:
        ints[i, pts] += rp[R_NO_TRICKS]
    elif contract == C_NO_HEARTS:
        hearts = taken & HEARTS_BITS
        if hearts:
            ace = 1 if taken & bit(ACE_OF_HEARTS) else 0
            ints[i, pts] += rp[R_NO_HEARTS] * (popcount(hearts) - ace) + rp[R_NO_HEARTS_ACE] * ace
            if rp[R_END_HEARTS]:
                held = cards[i, K_HANDS] | cards[i, K_HANDS + 1] | cards[i, K_HANDS + 2] | cards[i, K_HANDS + 3]
                over = over or (held & HEARTS_BITS) == U0
    elif contract == C_NO_QUEENS:
        queens = taken & QUEENS_BITS
        if queens:
            ints[i, pts] += rp[R_NO_QUEENS] * popcount(queens)
            if rp[R_END_QUEENS]:
                held = cards[i, K_HANDS] | cards[i, K_HANDS + 1] | cards[i, K_HANDS + 2] | cards[i, K_HANDS + 3]
                over = over or (held & QUEENS_BITS) == U0
    elif contract == C_BARBU:
        if taken & bit(KING_OF_HEARTS):
            ints[i, pts] += rp[R_BARBU]
            over = over or rp[R_END_BARBU] != 0
    elif contract == C_NO_LAST_TWO:
        if n >= 11:
            ints[i, pts] += rp[R_LAST_TWO + n - 11]
    else:  # Trumps
        ints[i, pts] += rp[R_TRUMPS]
    if over:
        return _finish_hand(ints, cards, preset, rp, rewards, i)
    ints[i, F_TRICK_NO] = n + 1
    ints[i, F_LEADER] = winner
    ints[i, F_CUR] = winner
    for p in range(4):
        ints[i, F_TRICK + p] = -1
    cards[i, K_TRICK] = U0
    ints[i, F_TSIZE] = 0
    ints[i, F_LED] = -1
    return ST_PLAYING


@_kernel
def _apply_domino(ints, cards, preset, rp, rewards, i, action):
    seat = ints[i, F_CUR]
    placed = popcount(cards[i, K_PLAYED] | cards[i, K_PLAYED + 1] | cards[i, K_PLAYED + 2] | cards[i, K_PLAYED + 3])
    if action == PASS_ACTION:  # a pass: none of the cards that could be placed is held
        cards[i, K_EXCL + seat] |= cards[i, K_PLAYABLE]
        cards[i, K_PASSES + seat] |= U1 << np.uint64(placed)
    else:
        ints[i, F_PLAY_INDEX + action] = 1 + placed
        b = bit(action)
        cards[i, K_HANDS + seat] ^= b
        cards[i, K_PLAYED + seat] |= b
        rank = action % 13
        # The card leaves the playable set; its row now reaches one rank further.
        cards[i, K_PLAYABLE] ^= b
        start = ints[i, F_RANK]
        if rank >= start and rank < 12:
            cards[i, K_PLAYABLE] |= b << U1
        if rank <= start and rank > 0:
            cards[i, K_PLAYABLE] |= b >> U1
        if not cards[i, K_HANDS + seat]:
            ints[i, F_OUT + ints[i, F_NOUT]] = seat
            ints[i, F_NOUT] += 1
            if ints[i, F_NOUT] == 3:
                last = 0
                while not cards[i, K_HANDS + last]:
                    last += 1
                ints[i, F_OUT + 3] = last
                for place in range(4):
                    ints[i, F_POINTS + ints[i, F_OUT + place]] = rp[R_DOMINO + place]
                return _finish_hand(ints, cards, preset, rp, rewards, i)
    # Next seat to the left that still holds cards.
    nxt = (seat + 1) % 4
    while not cards[i, K_HANDS + nxt]:
        nxt = (nxt + 1) % 4
    ints[i, F_CUR] = nxt
    return ST_PLAYING


@_kernel
def _finish_hand(ints, cards, preset, rp, rewards, i):
    """Settle the hand from the raw scores in F_POINTS (docs/rules.md#settlement) into ``rewards[i]``
    and its record (``F_REC_*``, ``K_REC_DEALT``); start the next hand (returns ST_HAND_OVER), or end the game
    (ST_GAME_OVER) after hand 28 or the last hand of the episode (F_HAND a multiple of F_EPISODE)."""
    _record_hand(ints, cards, i)
    for p in range(4):
        # For each pair at level k (1 double, 2 redoubled): p gets k * (raw_p - raw_q).
        raw = ints[i, F_POINTS + p]
        settled = raw
        for q in range(4):
            if q != p:
                k = ((ints[i, F_NAMED + p] >> q) & 1) + ((ints[i, F_NAMED + q] >> p) & 1)
                settled += k * (raw - ints[i, F_POINTS + q])
        rewards[i, p] = settled
        ints[i, F_REC_SETTLED + p] = settled
        ints[i, F_SCORES + p] += settled
    ints[i, F_HAND] += 1
    if ints[i, F_HAND] == NUM_HANDS or ints[i, F_HAND] % ints[i, F_EPISODE] == 0:
        ints[i, F_PHASE] = PH_GAME_OVER
        ints[i, F_CUR] = -1
        ints[i, F_DIRTY] = 0xF
        return ST_GAME_OVER
    _start_hand(ints, cards, preset, rp, i)
    return ST_HAND_OVER


@_kernel
def _record_hand(ints, cards, i):
    """Game i's hand, just over, into its record fields (all but the settled scores)."""
    ints[i, F_REC_HAND] = ints[i, F_HAND]
    ints[i, F_REC_DECLARER] = ints[i, F_DECLARER]
    ints[i, F_REC_CONTRACT] = ints[i, F_CONTRACT]
    ints[i, F_REC_TRUMP] = ints[i, F_TRUMP]
    ints[i, F_REC_RANK] = ints[i, F_RANK]
    ints[i, F_REC_NOUT] = ints[i, F_NOUT]
    for p in range(4):
        ints[i, F_REC_NAMED + p] = ints[i, F_NAMED + p]
        ints[i, F_REC_REDOUBLED + p] = ints[i, F_REDOUBLED + p]
        ints[i, F_REC_RAW + p] = ints[i, F_POINTS + p]
        ints[i, F_REC_WON + p] = ints[i, F_WON + p]
        ints[i, F_REC_OUT + p] = ints[i, F_OUT + p]
        cards[i, K_REC_DEALT + p] = cards[i, K_DEALT + p]


# ---------------------------------------------------------------------- observation and mask
#
# obs is float32 [B, OBS_DIM] and obs64 the same memory as uint64 [B, OBS_DIM / 2]: the card rows are
# written two floats at a time from _ROW_LUT, straight from the card sets, so no
# per-game float table has to be kept up to date and copied (measured: this halved
# the step).


@_kernel
def _write_row(obs64, i, word, cardset):
    """A card set as 52 float32 0/1 values at uint64 word ``word`` of obs64[i]: six bytes
    of 8 cardset (4 words each), then the last 4 cardset (2 words)."""
    for j in range(6):
        b = (cardset >> np.uint64(8 * j)) & _BYTE
        for k in range(4):
            obs64[i, word + 4 * j + k] = _ROW_LUT[b, k]
    b = (cardset >> np.uint64(48)) & _BYTE
    obs64[i, word + 24] = _ROW_LUT[b, 0]
    obs64[i, word + 25] = _ROW_LUT[b, 1]


@_kernel
def _write_decision(ints, cards, hblock, hblock64, rp, obs, obs64, mask, i):
    """Cache the legal set of game i's seat to act, and write its mask and observation."""
    lo, hi = _legal(ints, cards, rp, i)
    cards[i, K_LEGAL_LO] = lo
    cards[i, K_LEGAL_HI] = hi
    for a in range(NUM_ACTIONS):
        mask[i, a] = False
    while lo:
        mask[i, lowest(lo)] = True
        lo &= lo - U1
    while hi:
        mask[i, 64 + lowest(hi)] = True
        hi &= hi - U1
    _write_obs(ints, cards, hblock, hblock64, rp, obs, obs64, i, ints[i, F_CUR])


@_kernel
def _write_obs(ints, cards, hblock, hblock64, rp, obs, obs64, i, seat):
    """``seat``'s observation (the layout of ``barbu_env.game.observation``) into ``obs[i]``."""
    # Card rows in the observer's seat order: hand, then trick, played and taken rows
    # of relative seats 0-3, then the Domino playable set and the excluded rows.
    _write_row(obs64, i, O_HAND // 2, cards[i, K_HANDS + seat])
    for r in range(4):
        # A trick row holds one card at most: zeros, then 1.0 in its half of a word.
        word = (O_TRICK + 52 * r) // 2
        for k in range(26):
            obs64[i, word + k] = U0
        card = ints[i, F_TRICK + ((seat + r) & 3)]
        if card >= 0:
            obs64[i, word + (card >> 1)] = _ONE_F32 << np.uint64(32 * (card & 1))
    for r in range(4):
        _write_row(obs64, i, (O_PLAYED + 52 * r) // 2, cards[i, K_PLAYED + ((seat + r) & 3)])
    for r in range(4):
        _write_row(obs64, i, (O_TAKEN + 52 * r) // 2, cards[i, K_TAKEN + ((seat + r) & 3)])
    _write_row(obs64, i, O_PLAYABLE // 2, cards[i, K_PLAYABLE])
    for r in range(4):
        _write_row(obs64, i, (O_EXCL + 52 * r) // 2, cards[i, K_EXCL + ((seat + r) & 3)])
    # The hand-level block, rebuilt when stale.
    if (ints[i, F_DIRTY] >> seat) & 1:
        _hand_block(ints, rp, hblock, i, seat)
        ints[i, F_DIRTY] &= ~(1 << seat)
    # (hblock64 is hblock seen as uint64: 66 words, the block and a zero pad that the
    # per-decision block then overwrites.)
    for k in range(HAND_BLOCK_WORDS):
        obs64[i, O_HAND_BLOCK // 2 + k] = hblock64[i, seat, k]
    _step_block(ints, cards, obs, i, seat)
    if obs.shape[1] >= INFO_DIM:  # a buffer as wide as the information state
        _write_record(ints, cards, obs, obs64, i, seat)


@_kernel
def _write_record(ints, cards, obs, obs64, i, seat):
    """dealt ... domino_passes, the information state's slices after the observation, into
    obs[i] (float32 [B, INFO_DIM]): the hand's record, from ``seat``'s view."""
    _write_row(obs64, i, O_DEALT // 2, cards[i, K_DEALT + seat])
    for k in range(O_PLAY_ORDER // 2, O_DOMINO_PASSES // 2):  # play_order and doubling_turns
        obs64[i, k] = U0
    for card in range(NUM_CARDS):
        k = ints[i, F_PLAY_INDEX + card]
        if k > 0:
            obs[i, O_PLAY_ORDER + NUM_CARDS * (k - 1) + card] = 1.0
    for t in range(MAX_DOUBLING_TURNS):
        choice = ints[i, F_DOUBLE_CHOICE + t]
        if choice > 0:
            actor = ints[i, F_ORDER + t]
            row = O_DOUBLING_TURNS + 8 * t
            obs[i, row + ((actor - seat) & 3)] = 1.0
            for k in range(3):
                if ((choice - 1) >> k) & 1:
                    obs[i, row + 4 + ((actor + 1 + k - seat) & 3)] = 1.0
    for r in range(4):
        _write_row(obs64, i, (O_DOMINO_PASSES + 52 * r) // 2, cards[i, K_PASSES + ((seat + r) & 3)])


@_kernel
def _hand_block(ints, rp, hblock, i, seat):
    """phase ... game_scores, the hand-level block, into hblock[i, seat]."""
    for k in range(HAND_BLOCK_LEN):
        hblock[i, seat, k] = 0.0
    phase = ints[i, F_PHASE]
    hblock[i, seat, H_PHASE + phase] = 1.0
    hblock[i, seat, H_HAND_NO + min(ints[i, F_HAND], 27)] = 1.0
    if phase < PH_GAME_OVER:
        hblock[i, seat, H_DECLARER + ((ints[i, F_DECLARER] - seat) & 3)] = 1.0
        if ints[i, F_CONTRACT] >= 0:
            hblock[i, seat, H_CONTRACT + ints[i, F_CONTRACT]] = 1.0
        if ints[i, F_TRUMP] >= 0:
            hblock[i, seat, H_TRUMP + ints[i, F_TRUMP]] = 1.0
        if ints[i, F_RANK] >= 0:
            hblock[i, seat, H_RANK + ints[i, F_RANK]] = 1.0
        for r in range(4):
            named = ints[i, F_NAMED + ((seat + r) & 3)]
            for j in range(4):
                if (named >> ((seat + j) & 3)) & 1:
                    hblock[i, seat, H_DOUBLED + 4 * r + j] = 1.0
        done = ints[i, F_DLEN] if phase > PH_DOUBLE else ints[i, F_DPOS] if phase == PH_DOUBLE else 0
        for k in range(done):
            hblock[i, seat, H_DONE + ((ints[i, F_ORDER + k] - seat) & 3)] = 1.0
    m = rp[R_MIN_DOUBLES]
    for r in range(4):
        p = (seat + r) & 3
        left = ints[i, F_LEFT + p]
        for k in range(7):
            if (left >> k) & 1:
                hblock[i, seat, H_LEFT + 7 * r + k] = 1.0
        if m:
            for j in range(4):
                hblock[i, seat, H_OWED + 4 * r + j] = ints[i, F_OWED + 4 * p + ((seat + j) & 3)] / m
        hblock[i, seat, H_SCORES + r] = ints[i, F_SCORES + p] / 100.0


@_kernel
def _step_block(ints, cards, obs, i, seat):
    """to_act ... voids, the per-decision block, into obs[i]."""
    for k in range(O_STEP_BLOCK, OBS_DIM):
        obs[i, k] = 0.0
    phase = ints[i, F_PHASE]
    if phase < PH_GAME_OVER:
        obs[i, O_TO_ACT + ((ints[i, F_CUR] - seat) & 3)] = 1.0
    if phase == PH_TRICKS:
        obs[i, O_LEADER + ((ints[i, F_LEADER] - seat) & 3)] = 1.0
        obs[i, O_TRICK_NO + ints[i, F_TRICK_NO]] = 1.0
    for r in range(4):
        p = (seat + r) & 3
        obs[i, O_WON + r] = _THIRTEENTHS[ints[i, F_WON + p]]
        obs[i, O_POINTS + r] = ints[i, F_POINTS + p] / 10.0
        obs[i, O_CARDS_LEFT + r] = _THIRTEENTHS[popcount(cards[i, K_HANDS + p])]
        voids = ints[i, F_VOIDS + p]
        for s in range(4):
            if (voids >> s) & 1:
                obs[i, O_VOIDS + 4 * r + s] = 1.0
    for k in range(ints[i, F_NOUT]):
        obs[i, O_PLACE + 4 * ((ints[i, F_OUT + k] - seat) & 3) + k] = 1.0


# ---------------------------------------------------------------------- batch entry points
#
# The state arrays travel as one ``Games`` and the arrays the entry points write as one
# ``Decisions`` (and ``Outcomes``), the same names everywhere; the callers unpack them into the
# entry points' leading arguments (``K.step_games(*games, rp, actions, *decisions, *outcomes)``):
# numba types a tuple argument in Python at every call, about 1.2 us per tuple (measured), which
# the one-game engine would pay at every decision.

#: A batch's state (the module docstring): ``ints`` int64 [B, F], ``cards`` uint64 [B, K],
#: ``hblock`` float32 [B, 4, 132] and ``hblock64`` (the same memory as uint64), ``preset``
#: uint64 [B, 28, 4] (the deals given per game). ``BarbuState`` holds one with B = 1.
Games = namedtuple("Games", ["ints", "cards", "hblock", "hblock64", "preset"])
#: Each slot's next decision: ``obs`` float32 [B, W] (W: OBS_DIM or INFO_DIM) and ``obs64``
#: (the same memory as uint64), ``mask`` bool [B, 85], ``seat`` int64 [B].
Decisions = namedtuple("Decisions", ["obs", "obs64", "mask", "seat"])
#: What a step came to per slot: ``rewards`` float32 [B, 4], ``dones`` and ``hand_over`` bool
#: [B], ``final_scores`` float32 [B, 4] and ``lengths`` int64 [B] (valid where ``dones``).
Outcomes = namedtuple("Outcomes", ["rewards", "dones", "hand_over", "final_scores", "lengths"])


def new_games(num_games: int, episode: int = NUM_HANDS) -> Games:
    """The zeroed state arrays of ``num_games`` slots whose games end after ``episode`` hands."""
    ints = np.zeros((num_games, NUM_INT_FIELDS), dtype=np.int64)
    ints[:, F_EPISODE] = episode
    hblock = np.zeros((num_games, 4, 2 * HAND_BLOCK_WORDS), dtype=np.float32)
    preset = np.zeros((num_games, NUM_HANDS, 4), dtype=np.uint64)
    return Games(ints, np.zeros((num_games, NUM_CARD_FIELDS), dtype=np.uint64), hblock, hblock.view(np.uint64), preset)


@_kernel
def reset_games(ints, cards, hblock, hblock64, preset, rp, n_preset, first, obs, obs64, mask, seat):
    """Start a new game in every slot (``Games``) and write its first decision (``Decisions``)."""
    for i in range(ints.shape[0]):
        _new_game(ints, cards, preset, rp, i, n_preset[i], first[i])
        _write_decision(ints, cards, hblock, hblock64, rp, obs, obs64, mask, i)
        seat[i] = ints[i, F_CUR]


@_kernel
def load_games(ints, cards, hblock, hblock64, preset, rp, slots, pos_ints, pos_cards, deals, obs, obs64, mask, seat):
    """Position k (``pos_ints[k]``, ``pos_cards[k]``, its deals ``deals[k]``) into slot ``slots[k]``
    (``Games``), which keeps its random stream and its episode length; write the slot's decision
    (``Decisions``)."""
    for k in range(slots.shape[0]):
        i = slots[k]
        rng = cards[i, K_RNG]
        episode = ints[i, F_EPISODE]
        for f in range(ints.shape[1]):
            ints[i, f] = pos_ints[k, f]
        for f in range(cards.shape[1]):
            cards[i, f] = pos_cards[k, f]
        cards[i, K_RNG] = rng
        ints[i, F_EPISODE] = episode
        for h in range(NUM_HANDS):
            for p in range(4):
                preset[i, h, p] = deals[k, h, p]
        ints[i, F_DIRTY] = 0xF
        _write_decision(ints, cards, hblock, hblock64, rp, obs, obs64, mask, i)
        seat[i] = ints[i, F_CUR]


@_kernel
def _first_illegal(cards, actions):
    """Index of the first game whose action is not legal, or -1."""
    for i in range(cards.shape[0]):
        a = actions[i]
        if a < 0 or a >= NUM_ACTIONS:
            return i
        if a < 64:
            if not (cards[i, K_LEGAL_LO] >> np.uint64(a)) & U1:
                return i
        elif not (cards[i, K_LEGAL_HI] >> np.uint64(a - 64)) & U1:
            return i
    return -1


@_kernel
def step_games(
    ints,
    cards,
    hblock,
    hblock64,
    preset,
    rp,
    actions,
    obs,
    obs64,
    mask,
    seat,
    rewards,
    dones,
    hand_over,
    final_scores,
    lengths,
):
    """Apply every game's action (``Games``) and write every slot's next decision
    (``Decisions``) and what the step came to (``Outcomes``); a finished game (its episode's
    last hand settled) is reset at once (dealt from its slot's stream, first declarer drawn).

    Every action is checked first: if one is illegal nothing is applied and the index
    of the first such game is returned; else -1."""
    bad = _first_illegal(cards, actions)
    if bad >= 0:
        return bad
    for i in range(ints.shape[0]):
        for p in range(4):
            rewards[i, p] = 0.0
        status = _apply(ints, cards, preset, rp, rewards, i, actions[i])
        hand_over[i] = status != ST_PLAYING
        dones[i] = status == ST_GAME_OVER
        if status == ST_GAME_OVER:
            for p in range(4):
                final_scores[i, p] = ints[i, F_SCORES + p]
            lengths[i] = ints[i, F_DECISIONS]
            _new_game(ints, cards, preset, rp, i, 0, -1)
        _write_decision(ints, cards, hblock, hblock64, rp, obs, obs64, mask, i)
        seat[i] = ints[i, F_CUR]
    return -1


@_kernel
def other_hands(ints, cards, out64):
    """Per game, the hands of the three players other than the seat to act, relative
    seats 1, 2, 3 (the rows ObservationEncoder.privileged appends), into out64
    (float32 [B, 156] seen as uint64 [B, 78])."""
    for i in range(ints.shape[0]):
        s = ints[i, F_CUR]
        for r in range(3):
            _write_row(out64, i, 26 * r, cards[i, K_HANDS + ((s + 1 + r) & 3)])


# ---------------------------------------------------------------------- one game (barbu_env.game.engine)
#
# BarbuState keeps one game as row 0 of arrays shaped like the batch's ([1, ...]), all
# of its deals preset (drawn by the engine from its numpy Generator), and steps it
# with these: no automatic reset, the legal set cached after every change.


@_kernel
def _cache_legal(ints, cards, rp, i):
    lo, hi = _legal(ints, cards, rp, i)
    cards[i, K_LEGAL_LO] = lo
    cards[i, K_LEGAL_HI] = hi


@_kernel
def game_new(ints, cards, hblock, hblock64, preset, rp, first, episode):
    """A new game in row 0 with ``first`` declarer, every hand dealt from ``preset[0]``,
    ending after ``episode`` hands (``F_EPISODE``). Returns the seat to act and its legal
    set (two words)."""
    ints[0, F_EPISODE] = episode
    _new_game(ints, cards, preset, rp, 0, NUM_HANDS, first)
    _cache_legal(ints, cards, rp, 0)
    return ints[0, F_CUR], cards[0, K_LEGAL_LO], cards[0, K_LEGAL_HI]


@_kernel
def game_refresh(ints, cards, rp):
    """After a change made from outside (the engine's setters): every seat's hand-level
    block is marked stale and the legal set recomputed (returned as two words)."""
    ints[0, F_DIRTY] = 0xF
    _cache_legal(ints, cards, rp, 0)
    return cards[0, K_LEGAL_LO], cards[0, K_LEGAL_HI]


@_kernel
def game_step(ints, cards, hblock, hblock64, preset, rp, rewards, obs, obs64, action, observe):
    """Apply the (legal) action of row 0's seat to act and, if ``observe`` and the game
    goes on, write the observation of the next seat to act into ``obs[0]``. Returns the
    status (``ST_PLAYING``; ``ST_HAND_OVER``: a hand ended, its record in ``F_REC_*``;
    ``ST_GAME_OVER``: the game ended), the seat to act and its legal set (two words)."""
    status = _apply(ints, cards, preset, rp, rewards, 0, action)
    _cache_legal(ints, cards, rp, 0)
    seat = ints[0, F_CUR]
    if observe and seat >= 0:
        _write_obs(ints, cards, hblock, hblock64, rp, obs, obs64, 0, seat)
    return status, seat, cards[0, K_LEGAL_LO], cards[0, K_LEGAL_HI]


@_kernel
def game_deal(ints, cards, hblock, hblock64, preset, rp, hands):
    """Row 0's current hand dealt again as ``hands`` (four card sets): the deal written
    into ``preset[0]`` and the hand started over from it (for a hand whose deal arrives
    after it began, as OpenSpiel's chance nodes deal it). Returns the seat to act and its
    legal set (two words)."""
    h = ints[0, F_HAND]
    for p in range(4):
        preset[0, h, p] = hands[p]
    if ints[0, F_PRESET] < h + 1:
        ints[0, F_PRESET] = h + 1
    _start_hand(ints, cards, preset, rp, 0)
    _cache_legal(ints, cards, rp, 0)
    return ints[0, F_CUR], cards[0, K_LEGAL_LO], cards[0, K_LEGAL_HI]


@_kernel
def game_observe(ints, cards, hblock, hblock64, preset, rp, obs, obs64, seat):
    """``seat``'s observation of row 0's game into ``obs[0]`` (its information state if
    ``obs`` is [1, INFO_DIM])."""
    _write_obs(ints, cards, hblock, hblock64, rp, obs, obs64, 0, seat)


@_kernel
def game_hands(cards, out64):
    """The four hands of row 0's game (absolute seats) as 4 card rows into out64
    (float32 [1, 208] seen as uint64 [1, 104])."""
    for p in range(4):
        _write_row(out64, 0, 26 * p, cards[0, K_HANDS + p])


@_kernel
def refusal(ints, cards, rp, i, action):
    """The ``constants.Refusal`` code of ``action`` for the seat to act in game (row) i of
    ``ints``/``cards`` under the rules ``rp``: ``Refusal.LEGAL`` exactly when it is legal."""
    return _refusal(ints, cards, rp, i, action)


@_kernel
def refusals(ints, cards, rp, i, out):
    """``refusal`` of every action 0-84 of game i into ``out`` (int64 [85])."""
    for a in range(NUM_ACTIONS):
        out[a] = _refusal(ints, cards, rp, i, a)


# ---------------------------------------------------------------------- positions (barbu_env.game.position)


@_kernel
def resume_position(ints, cards, done):
    """Row 0 of a position built from an observation (``Positions.from_observation``), whose
    observable fields are set (phase, declarer, seat to act, named sets, the trick's cards by
    seat and its leader): the rest as the rules make it. ``done`` is the 4-bit set of seats
    the observation shows as having taken their doubling turn."""
    _resume_doubling(ints, 0, done)
    _resume_trick(ints, cards, 0)
    _resume_redoubles(ints, 0)


@_kernel
def _resume_doubling(ints, i, done):
    """The doubling order and position (F_ORDER, F_DLEN, F_DPOS) that the phase, the seat to
    act, the named sets and ``done`` imply: in the redouble pass, the seat to act and then the
    later seats of the first three turns that still have someone to redouble."""
    _four_turns(ints, i)
    phase = ints[i, F_PHASE]
    if phase != PH_DOUBLE:
        ints[i, F_DLEN] = ints[i, F_DPOS] = 0 if phase < PH_DOUBLE else 4
        return
    cur = ints[i, F_CUR]
    k = 0
    while ints[i, F_ORDER + k] != cur:
        k += 1
    ints[i, F_DLEN] = 4
    if not (done >> cur) & 1:
        ints[i, F_DPOS] = k
        return
    ints[i, F_ORDER + 4] = cur
    ints[i, F_DLEN] = 5
    ints[i, F_DPOS] = 4
    _add_pass_turns(ints, i, k + 1)


@_kernel
def _resume_trick(ints, cards, i):
    """The current trick's card set, size, suit led and winner so far, from the cards by seat
    (F_TRICK) played in order from F_LEADER."""
    cards[i, K_TRICK] = U0
    ints[i, F_TSIZE] = 0
    ints[i, F_LED] = ints[i, F_WIN_SEAT] = ints[i, F_WIN_CARD] = -1
    size = 0
    for p in range(4):
        if ints[i, F_TRICK + p] >= 0:
            cards[i, K_TRICK] |= bit(ints[i, F_TRICK + p])
            size += 1
    for k in range(size):
        p = (ints[i, F_LEADER] + k) % 4
        card = ints[i, F_TRICK + p]
        if k == 0:
            ints[i, F_LED] = card // 13
            ints[i, F_WIN_SEAT] = p
            ints[i, F_WIN_CARD] = card
        elif _beats(card, ints[i, F_WIN_CARD], ints[i, F_TRUMP]):
            ints[i, F_WIN_SEAT] = p
            ints[i, F_WIN_CARD] = card
    ints[i, F_TSIZE] = size


@_kernel
def _resume_redoubles(ints, i):
    """F_REDOUBLED from the named sets: of two seats that named each other, the later in the
    four doubling turns redoubled (exact without a redouble pass; with one, the observation
    does not show whether the earlier seat redoubled in the pass instead)."""
    for k in range(4):
        ints[i, F_REDOUBLED + ints[i, F_ORDER + k]] = 0
    for a in range(4):
        p = ints[i, F_ORDER + a]
        for b in range(a + 1, 4):
            q = ints[i, F_ORDER + b]
            if (ints[i, F_NAMED + p] >> q) & 1 and (ints[i, F_NAMED + q] >> p) & 1:
                ints[i, F_REDOUBLED + q] |= 1 << p
