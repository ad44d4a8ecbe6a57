"""The rules of the ``heuristic`` player, as numba kernels over uint64 card sets.

``heuristic.py`` documents the player (its decision table), holds its tunables and
model weights and is the agent; this module is what it decides with: ``heuristic_action``
(one observation, for ``act``) and ``heuristic_actions`` (a batch, for ``act_batch``).
Sections follow the decisions: declaring (and the hand model it rests on), doubling,
trick play in the negative contracts, Trumps, Domino.

Nothing about the player's numbers is compiled in: the point values and tunables arrive
as arrays built by ``heuristic.kernel_params`` (int64 ``ip`` indexed by ``P_*``, float64
``fp`` indexed by ``T_*``, the model weights as ``weights[2, 7, NUM_FEATURES]``: the
expected-raw-score model, then the versus-declarer model), so that a change of a tunable
in ``heuristic.py`` never meets a stale compilation cached on disk. The card, contract,
phase and action constants are the engine's; the observation offsets are looked up by
name in ``observation.OFFSETS`` (on import, a compilation cached for another layout is
dropped and made afresh: ``barbu_env.game._bits.refresh_stale_cache``). Contracts are ``C_*``,
phases ``PH_*``; the bit helpers are ``barbu_env.game._bits``'.

As in ``barbu_env.game._kernels``, every function is compiled with ``cache=True`` and without
reference counting (``_nrt=False``: they allocate nothing; the caller passes the scratch
array ``feat``), card sets are uint64 with ``np.uint64`` constants (``uint64 op int64``
is float64 in numba), and powers take a float exponent (``x ** float(k)``: libm's
``pow``, as Python computes ``float ** int``).
"""

from __future__ import annotations

import numpy as np

from ..game._bits import U0, U1, bit, highest, kernel, lowest, popcount, refresh_stale_cache
from ..game.actions import DECLARE_OFFSET, DOUBLE_OFFSET, NUM_ACTIONS, RANK_OFFSET, TRUMP_OFFSET
from ..game.cards import (
    ACE,
    ACE_OF_HEARTS,
    FULL_DECK,
    HEARTS,
    HEARTS_MASK,
    KING,
    KING_OF_HEARTS,
    NUM_CARDS,
    NUM_RANKS,
    NUM_SUITS,
    QUEEN,
    QUEENS_MASK,
    RANK_MASK,
)
from ..game.constants import CARDS_PER_HAND, NUM_PLAYERS, Contract, Phase
from ..game.observation import OBS_DIM, OFFSETS

# ---------------------------------------------------------------------- constants

C_NO_TRICKS = int(Contract.NO_TRICKS)
C_NO_HEARTS = int(Contract.NO_HEARTS)
C_NO_QUEENS = int(Contract.NO_QUEENS)
C_BARBU = int(Contract.NO_KING_OF_HEARTS)
C_NO_LAST_TWO = int(Contract.NO_LAST_TWO)
C_TRUMPS = int(Contract.TRUMPS)
C_DOMINO = int(Contract.DOMINO)
NUM_CONTRACTS = len(Contract)
PH_DECLARE = int(Phase.DECLARE)
PH_TRUMP = int(Phase.TRUMP)
PH_DOMINO_RANK = int(Phase.DOMINO_RANK)
PH_DOUBLE = int(Phase.DOUBLE)
PH_TRICKS = int(Phase.TRICKS)
PH_DOMINO = int(Phase.DOMINO)
NUM_PHASES = len(Phase)
NUM_DOUBLE_CHOICES = 8  # DOUBLE_OFFSET + a 3-bit set of the seats named (relative: 1 left ... 3 right)

FULL = np.uint64(FULL_DECK)
SUIT_RANKS = np.uint64((1 << NUM_RANKS) - 1)  # the 13 ranks of one suit
HEARTS_SET = np.uint64(HEARTS_MASK)
QUEENS_SET = np.uint64(QUEENS_MASK)
RANK_COLUMN = np.uint64(RANK_MASK[0])  # one card of each suit at rank 0 ("2"); shifted by r: rank r
TEN, JACK = QUEEN - 2, QUEEN - 1
#: Ranks 2-6 (the five lowest) and ranks J-A (the four highest), as rank sets of a suit.
LOW_RANKS = np.uint64((1 << 5) - 1)
HIGH_FROM = JACK
BELOW_QUEEN = np.uint64((1 << QUEEN) - 1)
BELOW_KING = np.uint64((1 << KING) - 1)

# ---------------------------------------------------------------------- observation layout

O_HAND = OFFSETS["hand"][0]
O_TRICK = OFFSETS["trick"][0]  # +52 per relative seat
O_PLAYED = OFFSETS["played"][0]  # +52 per relative seat
O_PHASE = OFFSETS["phase"][0]
O_CONTRACT = OFFSETS["contract"][0]
O_TRUMP = OFFSETS["trump"][0]
O_RANK = OFFSETS["domino_rank"][0]
O_DECLARER = OFFSETS["declarer"][0]
O_DOUBLED = OFFSETS["doubled"][0]  # [4, 4]: row j, column k: j named k (relative seats)
O_LEADER = OFFSETS["leader"][0]
O_TRICK_NO = OFFSETS["trick_number"][0]
O_CARDS_LEFT = OFFSETS["cards_left"][0]  # per relative seat, cards held / 13
LAYOUT = (O_HAND, O_TRICK, O_PLAYED, O_PHASE, O_CONTRACT, O_TRUMP, O_RANK, O_DECLARER, O_DOUBLED, O_LEADER,
          O_TRICK_NO, O_CARDS_LEFT, OBS_DIM)  # fmt: skip

# ---------------------------------------------------------------------- parameters

# ip (int64): point values (positive penalties) of the agent's rules, and one tunable.
P_TRICK = 0  # per trick, No Tricks
P_HEART = 1  # per heart, No Hearts
P_ACE_HEART = 2  # A♥, No Hearts
P_QUEEN = 3  # per queen, No Queens
P_KING = 4  # K♥, Barbu
P_LAST_TWO = 5  # +2: tricks 12 and 13, No Last Two
P_TOTAL = 7  # +7: the raw points of all four players together, per contract
P_SHED_UNTIL = 14  # NL2_SHED_UNTIL
NUM_INT_PARAMS = 15

# fp (float64): the tunables of heuristic.py and the declaring model's per-contract constants.
T_DUMP_WILL = 0
T_FUTURE_WEIGHT = 1
T_GIVE = 2
T_QUEEN_FALL = 3
T_KING_FALL = 4
T_FOLLOW_FALL = 5
T_FUTURE_DUMP = 6  # +4, by contract
T_PROTECT = 10  # +5, by contract
T_LEAD_LENGTH = 15
T_RANK_BONUS = 16  # DOMINO_RANK_BONUS
T_DOM_FAR = 17
T_DOM_COUNT = 18
T_OPTION_VALUE = 19
T_DOUBLE_MARGIN = 20
T_REDOUBLE_MARGIN = 21
T_AVERAGE = 22  # +7
T_SPREAD = 29  # +7
T_EXPECTED_MAX = 36  # +7
NUM_FLOAT_PARAMS = 43

# Models: weights[MODEL_RAW] predicts the observer's raw score, weights[MODEL_VS_DECLARER]
# the observer's raw score minus the declarer's (when not declaring).
MODEL_RAW, MODEL_VS_DECLARER = 0, 1

# ---------------------------------------------------------------------- hand features
# The features of a hand for the expected-score models (feat[F_*]); the same for every
# contract, each contract with its own weights. Counts unless said otherwise.

F_BIAS = 0  # 1
F_DECLARER = 1  # 1 if the observer declares
F_ACES, F_KINGS, F_QUEENS, F_JACKS, F_TENS = 2, 3, 4, 5, 6
F_TWOS_TO_FIVES = 7  # cards 2-5
F_VOIDS, F_SINGLETONS, F_DOUBLETONS = 8, 9, 10
F_LENGTH = 11  # cards past the fourth of each suit
F_UNGUARDED = 12  # per suit, cards J-A beyond the number of cards 2-6
F_RANK_SUM = 13  # sum of the ranks (2 = 0 ... A = 12) / 13
F_HEARTS = 14  # hearts held
F_ACE_HEARTS, F_KING_HEARTS = 15, 16
F_KING_HEARTS_GUARDS = 17  # with K♥: hearts below it
F_KING_HEARTS_BARE = 18  # K♥ with at most one heart below it
F_HIGH_HEARTS, F_LOW_HEARTS = 19, 20  # J♥-A♥, 2♥-6♥
F_QUEEN_GUARDS = 21  # per queen held: cards below it in its suit, at most 4
F_BARE_QUEENS = 22  # queens with at most one card below
F_KINGS_EXPOSED = 23  # kings and aces of a suit without its queen (0.5 each with three or more cards below Q)
F_TRUMP_LENGTH = 24  # Trumps only (0 otherwise): trumps held
F_TRUMP_ACE, F_TRUMP_KING, F_TRUMP_QUEEN = 25, 26, 27
F_TRUMP_HIGH = 28  # trumps J-A
F_SIDE_ACES, F_SIDE_KINGS = 29, 30
F_SIDE_SHORT = 31  # side suits of at most one card
F_TRUMP_EXTRA_SQ = 32  # (trumps past the fourth) squared
F_DOMINO_GAPS = 33  # Domino only (0 otherwise): _domino_gap_cost at the starting rank
F_DOMINO_AT_RANK = 34  # starting-rank cards held
F_DOMINO_SPREAD = 35  # sum over cards of |rank - starting rank| / 13
F_DOMINO_DECLARER_AT_RANK = 36  # F_DOMINO_AT_RANK if declaring
F_DOMINO_DECLARER_NONE = 37  # 1 if declaring without a starting-rank card
NUM_FEATURES = 38
FEATURE_NAMES = (
    "bias", "declarer", "aces", "kings", "queens", "jacks", "tens", "twos_to_fives", "voids", "singletons",
    "doubletons", "length", "unguarded", "rank_sum", "hearts", "ace_hearts", "king_hearts", "king_hearts_guards",
    "king_hearts_bare", "high_hearts", "low_hearts", "queen_guards", "bare_queens", "kings_exposed", "trump_length",
    "trump_ace", "trump_king", "trump_queen", "trump_high", "side_aces", "side_kings", "side_short",
    "trump_extra_sq", "domino_gaps", "domino_at_rank", "domino_spread", "domino_declarer_at_rank",
    "domino_declarer_none",
)  # fmt: skip
assert len(FEATURE_NAMES) == NUM_FEATURES

_kernel = kernel


# ---------------------------------------------------------------------- bits


@_kernel
def _below(r):
    """The ranks (or cards) below ``r``."""
    return (U1 << np.uint64(r)) - U1


@_kernel
def _suit_mask(s):
    """The 13 cards of suit s."""
    return SUIT_RANKS << np.uint64(NUM_RANKS * s)


@_kernel
def _suit(x, s):
    """The ranks of suit s in the set x, as a 13-bit rank set."""
    return (x >> np.uint64(NUM_RANKS * s)) & SUIT_RANKS


@_kernel
def _has_rank(x, r):
    """1 if the rank set (or card set) x holds rank (card) r, else 0."""
    return np.int64((x >> np.uint64(r)) & U1)


@_kernel
def _onehot(obs, start, n):
    """Index of the first value > 0.5 among obs[start : start + n], -1 if none."""
    for k in range(n):
        if obs[start + k] > 0.5:
            return k
    return -1


@_kernel
def _row(obs, start):
    """A 52-value card row of the observation as a card set (values > 0.5)."""
    x = U0
    for k in range(NUM_CARDS):
        if obs[start + k] > 0.5:
            x |= U1 << np.uint64(k)
    return x


@_kernel
def _played(obs):
    """Every card played so far in this hand, by anyone (the four ``played`` rows)."""
    return (
        _row(obs, O_PLAYED)
        | _row(obs, O_PLAYED + NUM_CARDS)
        | _row(obs, O_PLAYED + 2 * NUM_CARDS)
        | _row(obs, O_PLAYED + 3 * NUM_CARDS)
    )


# ---------------------------------------------------------------------- entry points


@_kernel
def layout():
    """The observation offsets this compilation was built with (checked on import)."""
    return LAYOUT


@_kernel
def heuristic_action(obs, mask, ip, fp, weights, feat):
    """The action for one observation ``obs`` (float [OBS_DIM]) with legal actions ``mask``
    ([NUM_ACTIONS], nonzero: legal); ``feat`` is a float64 scratch array [NUM_FEATURES]."""
    return _act(obs, mask, ip, fp, weights, feat)


@_kernel
def heuristic_actions(obs, masks, ip, fp, weights, feat, actions):
    """``actions[i]`` = ``heuristic_action`` of row i of ``obs`` [N, OBS_DIM] and ``masks``
    [N, NUM_ACTIONS]."""
    for i in range(obs.shape[0]):
        actions[i] = _act(obs[i], masks[i], ip, fp, weights, feat)


@_kernel
def _act(obs, mask, ip, fp, weights, feat):
    """A forced decision (zero or one legal action) is answered from the mask alone
    (0 when nothing is legal); otherwise the phase's rule decides. An answer the mask
    forbids (which the rules never give) is replaced by the first legal action."""
    n_legal = 0
    first = -1
    cards = U0
    for a in range(NUM_ACTIONS):
        if mask[a]:
            n_legal += 1
            if first < 0:
                first = a
            if a < NUM_CARDS:
                cards |= U1 << np.uint64(a)
    if n_legal <= 1:
        return max(first, 0)
    phase = _onehot(obs, O_PHASE, NUM_PHASES)
    if phase == PH_TRICKS:
        a = _play_trick(obs, ip, fp, cards)
    elif phase == PH_DOMINO:
        a = _play_domino(obs, fp, cards)
    elif phase == PH_DOUBLE:
        a = _double(obs, mask, ip, fp, weights, feat, _row(obs, O_HAND))
    elif phase == PH_DECLARE:
        a = _declare(mask, ip, fp, weights, feat, _row(obs, O_HAND))
    elif phase == PH_TRUMP:
        a = TRUMP_OFFSET + _best_trump(_row(obs, O_HAND))
    elif phase == PH_DOMINO_RANK:
        a = RANK_OFFSET + _best_domino_rank(_row(obs, O_HAND), fp)
    else:
        a = -1
    if a < 0 or a >= NUM_ACTIONS or not mask[a]:
        a = first
    return a


# ---------------------------------------------------------------------- declaring


@_kernel
def _declare(mask, ip, fp, weights, feat, hand):
    """The legal contract with the highest ``_contract_value`` less the option of keeping
    it for a better later hand: OPTION_VALUE x the expected best of the later hands
    (_EXPECTED_MAX of their number, in standard deviations) x the contract's spread."""
    later = -1  # hands still to declare after this one
    for c in range(NUM_CONTRACTS):
        if mask[DECLARE_OFFSET + c]:
            later += 1
    keep = fp[T_OPTION_VALUE] * fp[T_EXPECTED_MAX + later]
    best = -1
    best_v = -1e9
    for c in range(NUM_CONTRACTS):
        if mask[DECLARE_OFFSET + c]:
            v = _contract_value(ip, fp, weights, feat, hand, c) - keep * fp[T_SPREAD + c]
            if v > best_v:
                best = c
                best_v = v
    return DECLARE_OFFSET + best


@_kernel
def _contract_value(ip, fp, weights, feat, hand, c):
    """Expected raw score of ``hand`` in contract ``c`` as declarer, less the contract's
    average (how much better than usual this hand is for ``c``); Trumps with the trump
    suit and Domino with the starting rank this player would name."""
    _hand_features(fp, feat, hand, c, True, -1, -1)
    return _dot(weights, MODEL_RAW, c, feat) - fp[T_AVERAGE + c]


@_kernel
def _dot(weights, model, c, feat):
    """A model's prediction: the weights of ``model`` and contract ``c`` times ``feat``,
    summed left to right."""
    w = weights[model, c]
    total = 0.0
    for k in range(NUM_FEATURES):
        total += w[k] * feat[k]
    return total


@_kernel
def _hand_features(fp, feat, hand, c, declarer, trump, rank):
    """``_features`` with the trump suit / starting rank this player would name when not
    given (negative)."""
    if c == C_TRUMPS and trump < 0:
        trump = _best_trump(hand)
    if c == C_DOMINO and rank < 0:
        rank = _best_domino_rank(hand, fp)
    _features(feat, hand, c, declarer, trump, rank)


@_kernel
def _best_trump(hand):
    """The longest suit, honours breaking ties: 1.5 per card, A 4, K 3, Q 2, J 1."""
    best = 0
    best_v = -1e9
    for s in range(NUM_SUITS):
        x = _suit(hand, s)
        v = (
            1.5 * popcount(x)
            + 4 * _has_rank(x, ACE)
            + 3 * _has_rank(x, KING)
            + 2 * _has_rank(x, QUEEN)
            + _has_rank(x, JACK)
        )
        if v > best_v:
            best = s
            best_v = v
    return best


@_kernel
def _best_domino_rank(hand, fp):
    """The starting rank with the fewest cards of the others between it and ours
    (``_domino_gap_cost``), DOMINO_RANK_BONUS off per starting-rank card held."""
    best = 0
    best_v = 1e9
    for r in range(NUM_RANKS):
        v = _domino_gap_cost(hand, r) - fp[T_RANK_BONUS] * popcount((hand >> np.uint64(r)) & RANK_COLUMN)
        if v < best_v:
            best = r
            best_v = v
    return best


@_kernel
def _domino_gap_cost(hand, r):
    """Cards of other players that must be played before each of ours becomes playable,
    summed over our cards, with starting rank ``r``."""
    cost = 0
    for s in range(NUM_SUITS):
        mine = _suit(hand, s)
        if not mine:
            continue
        gaps = 0
        for k in range(r, NUM_RANKS):
            if _has_rank(mine, k):
                cost += gaps
            else:
                gaps += 1
        gaps = 0
        for k in range(r - 1, -1, -1):
            if _has_rank(mine, k):
                cost += gaps
            else:
                gaps += 1
    return cost


@_kernel
def _rank_count(s0, s1, s2, s3, r):
    """Cards of rank r in the four suits' rank sets."""
    return _has_rank(s0, r) + _has_rank(s1, r) + _has_rank(s2, r) + _has_rank(s3, r)


@_kernel
def _features(feat, hand, contract, declarer, trump, rank):
    """The hand features ``F_*`` of ``hand`` into ``feat``; the Trumps features need the
    trump suit, the Domino features the starting rank (else they are 0)."""
    s0 = _suit(hand, 0)
    s1 = _suit(hand, 1)
    s2 = _suit(hand, 2)
    s3 = _suit(hand, 3)
    voids = singles = doubles = longs = unguarded = 0
    rank_sum = 0
    q_guard = q_bare = 0
    kings_exposed = 0.0
    for s in range(NUM_SUITS):
        x = _suit(hand, s)
        k = popcount(x)
        voids += k == 0
        singles += k == 1
        doubles += k == 2
        longs += max(0, k - 4)
        unguarded += max(0, popcount(x >> np.uint64(HIGH_FROM)) - popcount(x & LOW_RANKS))
        for r in range(NUM_RANKS):
            if _has_rank(x, r):
                rank_sum += r
        if _has_rank(x, QUEEN):
            lower = popcount(x & BELOW_QUEEN)
            q_guard += min(lower, 4)
            q_bare += lower <= 1
        elif x >> np.uint64(KING):
            kings_exposed += popcount(x >> np.uint64(KING)) * (1.0 if popcount(x & BELOW_QUEEN) <= 2 else 0.5)
    h = _suit(hand, HEARTS)
    has_kh = _has_rank(h, KING)
    h_low = popcount(h & BELOW_KING)
    feat[F_BIAS] = 1.0
    feat[F_DECLARER] = 1.0 if declarer else 0.0
    feat[F_ACES] = _rank_count(s0, s1, s2, s3, ACE)
    feat[F_KINGS] = _rank_count(s0, s1, s2, s3, KING)
    feat[F_QUEENS] = _rank_count(s0, s1, s2, s3, QUEEN)
    feat[F_JACKS] = _rank_count(s0, s1, s2, s3, JACK)
    feat[F_TENS] = _rank_count(s0, s1, s2, s3, TEN)
    feat[F_TWOS_TO_FIVES] = (
        _rank_count(s0, s1, s2, s3, 0)
        + _rank_count(s0, s1, s2, s3, 1)
        + _rank_count(s0, s1, s2, s3, 2)
        + _rank_count(s0, s1, s2, s3, 3)
    )
    feat[F_VOIDS] = voids
    feat[F_SINGLETONS] = singles
    feat[F_DOUBLETONS] = doubles
    feat[F_LENGTH] = longs
    feat[F_UNGUARDED] = unguarded
    feat[F_RANK_SUM] = rank_sum / 13.0
    feat[F_HEARTS] = popcount(h)
    feat[F_ACE_HEARTS] = _has_rank(h, ACE)
    feat[F_KING_HEARTS] = has_kh
    feat[F_KING_HEARTS_GUARDS] = has_kh * h_low
    feat[F_KING_HEARTS_BARE] = has_kh * (1 if h_low <= 1 else 0)
    feat[F_HIGH_HEARTS] = popcount(h >> np.uint64(HIGH_FROM))
    feat[F_LOW_HEARTS] = popcount(h & LOW_RANKS)
    feat[F_QUEEN_GUARDS] = q_guard
    feat[F_BARE_QUEENS] = q_bare
    feat[F_KINGS_EXPOSED] = kings_exposed
    if contract == C_TRUMPS and trump >= 0:
        t = _suit(hand, trump)
        side_aces = side_kings = side_short = 0
        for s in range(NUM_SUITS):
            if s != trump:
                x = _suit(hand, s)
                side_aces += _has_rank(x, ACE)
                side_kings += _has_rank(x, KING)
                side_short += popcount(x) <= 1
        n_t = popcount(t)
        extra = max(0, n_t - 4)
        feat[F_TRUMP_LENGTH] = n_t
        feat[F_TRUMP_ACE] = _has_rank(t, ACE)
        feat[F_TRUMP_KING] = _has_rank(t, KING)
        feat[F_TRUMP_QUEEN] = _has_rank(t, QUEEN)
        feat[F_TRUMP_HIGH] = popcount(t >> np.uint64(HIGH_FROM))
        feat[F_SIDE_ACES] = side_aces
        feat[F_SIDE_KINGS] = side_kings
        feat[F_SIDE_SHORT] = side_short
        feat[F_TRUMP_EXTRA_SQ] = extra * extra
    else:
        for k in range(F_TRUMP_LENGTH, F_TRUMP_EXTRA_SQ + 1):
            feat[k] = 0.0
    if contract == C_DOMINO and rank >= 0:
        at = _rank_count(s0, s1, s2, s3, rank)
        spread = 0
        for r in range(NUM_RANKS):
            spread += abs(r - rank) * _rank_count(s0, s1, s2, s3, r)
        feat[F_DOMINO_GAPS] = _domino_gap_cost(hand, rank)
        feat[F_DOMINO_AT_RANK] = at
        feat[F_DOMINO_SPREAD] = spread / 13.0
        feat[F_DOMINO_DECLARER_AT_RANK] = at if declarer else 0
        feat[F_DOMINO_DECLARER_NONE] = 1.0 if declarer and at == 0 else 0.0
    else:
        for k in range(F_DOMINO_GAPS, NUM_FEATURES):
            feat[k] = 0.0


# ---------------------------------------------------------------------- doubling


@_kernel
def _double(obs, mask, ip, fp, weights, feat, hand):
    """Name a player when the observer's expected raw score beats theirs: the declarer by
    the versus-declarer model, anyone else by the raw model against the average of the
    other three (the contract's total less ours, over three). Naming someone who already
    named us is a redouble (REDOUBLE_MARGIN instead of DOUBLE_MARGIN). Whatever the mask
    requires (every legal choice names them) is named anyway."""
    allowed = 0
    required = NUM_DOUBLE_CHOICES - 1
    for b in range(NUM_DOUBLE_CHOICES):
        if mask[DOUBLE_OFFSET + b]:
            allowed |= b
            required &= b
    decl = _onehot(obs, O_DECLARER, NUM_PLAYERS)
    contract = _onehot(obs, O_CONTRACT, NUM_CONTRACTS)
    trump = _onehot(obs, O_TRUMP, NUM_SUITS)
    rank = _onehot(obs, O_RANK, NUM_RANKS)
    if contract < 0:  # no contract declared: never happens in a doubling turn
        return -1
    _hand_features(fp, feat, hand, contract, decl == 0, trump, rank)
    me = _dot(weights, MODEL_RAW, contract, feat)
    other = (ip[P_TOTAL + contract] - me) / 3.0
    vs_declarer = _dot(weights, MODEL_VS_DECLARER, contract, feat) if decl != 0 else 0.0
    want = 0
    for k in range(3):
        j = k + 1  # relative seat named by bit k
        if not (allowed >> k) & 1:
            continue
        edge = vs_declarer if j == decl else me - other
        margin = fp[T_REDOUBLE_MARGIN] if obs[O_DOUBLED + 4 * j] > 0.5 else fp[T_DOUBLE_MARGIN]
        if edge > margin:
            want |= 1 << k
    return DOUBLE_OFFSET + ((want & allowed) | required)


# ---------------------------------------------------------------------- trick play
#
# The facts of the current trick travel as arguments: hand, cards (the legal cards), out
# (cards neither held nor played: in the other players' hands), contract, tn (trick
# number, 0-based), cl (cards left per relative seat, a 4-tuple), trump (-1 unless
# Trumps), led (suit led, -1 when leading), win (card winning the trick so far),
# trick_mask (cards in the trick). The players still to play after us are always the
# relative seats 1 .. m, and travel as m.


@_kernel
def _play_trick(obs, ip, fp, cards):
    """Reads the trick from the observation and hands it to the contract's rule:
    ``_play_trumps``, ``_play_shed`` (No Last Two before NL2_SHED_UNTIL) or
    ``_play_avoid`` (the negative contracts)."""
    hand = _row(obs, O_HAND)
    trick = (
        _row(obs, O_TRICK),
        _row(obs, O_TRICK + NUM_CARDS),
        _row(obs, O_TRICK + 2 * NUM_CARDS),
        _row(obs, O_TRICK + 3 * NUM_CARDS),
    )
    out = FULL & ~hand & ~_played(obs)
    contract = _onehot(obs, O_CONTRACT, NUM_CONTRACTS)
    leader = _onehot(obs, O_LEADER, NUM_PLAYERS)
    tn = _onehot(obs, O_TRICK_NO, CARDS_PER_HAND)
    n_played = (4 - leader) & 3
    cl = (_cards_left(obs, 0), _cards_left(obs, 1), _cards_left(obs, 2), _cards_left(obs, 3))
    n_after = 3 - n_played
    trump = _onehot(obs, O_TRUMP, NUM_SUITS) if contract == C_TRUMPS else -1
    trick_mask = U0
    if n_played:
        lead_card = highest(trick[leader & 3])
        led = lead_card // NUM_RANKS
        win = lead_card
        for k in range(1, n_played):
            c = highest(trick[(leader + k) & 3])
            if (c // NUM_RANKS == win // NUM_RANKS and c > win) or (
                c // NUM_RANKS == trump and win // NUM_RANKS != trump
            ):
                win = c
        for k in range(n_played):
            trick_mask |= trick[(leader + k) & 3]
    else:
        led = -1
        win = -1
    if contract == C_TRUMPS:
        return _play_trumps(hand, cards, out, trump, led, win, n_after)
    if contract == C_NO_LAST_TWO and tn < ip[P_SHED_UNTIL]:
        return _play_shed(ip, fp, hand, cards, out, contract)
    return _play_avoid(ip, fp, hand, cards, out, contract, tn, cl, n_after, led, win, trick_mask)


@_kernel
def _cards_left(obs, p):
    """Cards held by relative seat p: its ``cards_left`` value x 13, rounded half to even."""
    return np.int64(np.rint(np.float64(obs[O_CARDS_LEFT + p]) * 13.0))


# --- negative contracts


@_kernel
def _pen(ip, m, contract):
    """Penalty points of a set of cards for whoever takes them."""
    if contract == C_NO_HEARTS:
        h = m & HEARTS_SET
        if not h:
            return 0
        a = _has_rank(h, ACE_OF_HEARTS)
        return ip[P_HEART] * (popcount(h) - a) + ip[P_ACE_HEART] * a
    if contract == C_NO_QUEENS:
        return ip[P_QUEEN] * popcount(m & QUEENS_SET)
    if contract == C_BARBU:
        return ip[P_KING] if _has_rank(m, KING_OF_HEARTS) else 0
    return 0


@_kernel
def _base_cost(ip, contract, tn):
    """What taking trick ``tn`` costs by itself (No Tricks; No Last Two's last two)."""
    if contract == C_NO_TRICKS:
        return ip[P_TRICK]
    if contract == C_NO_LAST_TWO:
        if tn == CARDS_PER_HAND - 2:
            return ip[P_LAST_TWO]
        if tn == CARDS_PER_HAND - 1:
            return ip[P_LAST_TWO + 1]
    return 0


@_kernel
def _dump_risk(ip, fp, out, contract, cl, m, suit):
    """Expected penalty that players 1 .. m drop on this trick when void in ``suit``: per
    player, chance of being void x chance of holding an outstanding penalty card x its
    average penalty x DUMP_WILL."""
    if contract == C_NO_TRICKS or contract == C_NO_LAST_TWO:
        return 0.0
    if contract == C_NO_HEARTS:
        pen_out = out & HEARTS_SET
    elif contract == C_NO_QUEENS:
        pen_out = out & QUEENS_SET
    else:
        pen_out = out & bit(KING_OF_HEARTS)
    pen_out &= ~_suit_mask(suit)
    if not pen_out:
        return 0.0
    u = popcount(out)
    k = popcount(out & _suit_mask(suit))
    n_pen = popcount(pen_out)
    risk = 0.0
    per = _pen(ip, pen_out, contract) / n_pen
    for p in range(1, m + 1):
        n = cl[p]
        if n <= 0 or u <= 0:
            continue
        frac = min(1.0, n / u)
        p_void = (1.0 - frac) ** np.float64(k)
        p_has = 1.0 - (1.0 - frac) ** np.float64(n_pen)
        risk += p_void * p_has * per * fp[T_DUMP_WILL]
    return risk


@_kernel
def _sum_left(cl, m):
    """Cards held by players 1 .. m."""
    total = 0
    for p in range(1, m + 1):
        total += cl[p]
    return total


@_kernel
def _follow_risk(ip, fp, out, contract, cl, m, c):
    """Expected penalty that players 1 .. m (after us) add to the trick by following suit,
    if card ``c`` wins it: hearts on a heart (No Hearts), the suit's queen under a higher
    card (No Queens), K♥ under A♥ (Barbu); FOLLOW_FALL is the chance a holder plays it."""
    s = c // NUM_RANKS
    r = c % NUM_RANKS
    if contract == C_NO_HEARTS:
        if s != HEARTS:
            return 0.0
        h = out & HEARTS_SET
        k = popcount(h)
        if not k:
            return 0.0
        u = popcount(out)
        e = 0.0
        for q in range(1, m + 1):
            frac = min(1.0, cl[q] / u)
            e += (1.0 - (1.0 - frac) ** np.float64(k)) * ip[P_HEART]
        if _has_rank(h, ACE_OF_HEARTS):
            e += (ip[P_ACE_HEART] - ip[P_HEART]) * fp[T_FOLLOW_FALL] * _sum_left(cl, m) / u
        return e
    if contract == C_NO_QUEENS:
        if r > QUEEN and _has_rank(out, NUM_RANKS * s + QUEEN):
            return fp[T_FOLLOW_FALL] * ip[P_QUEEN] * _sum_left(cl, m) / popcount(out)
        return 0.0
    if contract == C_BARBU and c == ACE_OF_HEARTS and _has_rank(out, KING_OF_HEARTS):
        return fp[T_FOLLOW_FALL] * ip[P_KING] * _sum_left(cl, m) / popcount(out)
    return 0.0


@_kernel
def _p_win(out, cl, m, c):
    """Chance that card ``c`` is not beaten by players 1 .. m, given it beats the trick
    so far: each may hold one of the higher outstanding cards of the suit (and play it,
    in proportion of the higher among the outstanding cards)."""
    s = c // NUM_RANKS
    r = c % NUM_RANKS
    o = _suit(out, s)
    h = popcount(o >> np.uint64(r + 1))
    if h == 0:
        return 1.0
    low = popcount(o & _below(r))
    u = popcount(out)
    share = h / (h + low) if low else 1.0
    p = 1.0
    for q in range(1, m + 1):
        n = cl[q]
        if n <= 0:
            continue
        frac = min(1.0, n / u)
        holds = 1.0 - (1.0 - frac) ** np.float64(h)
        p *= 1.0 - holds * share
    return p


@_kernel
def _danger(ip, fp, hand, out, contract, c):
    """Future cost of keeping card ``c`` in hand (what playing it now saves): the chance
    it wins a later trick (none without a lower outstanding card; own lower cards protect
    it, PROTECT each) times what that trick would cost, its own penalty included."""
    s = c // NUM_RANKS
    r = c % NUM_RANKS
    o = _suit(out, s)
    below = o & _below(r)
    low = popcount(below)
    if not low:
        return 0.0
    high = popcount(o >> np.uint64(r + 1))
    mine = _suit(hand, s)
    # own lower cards protect c only if an outstanding card lies between (equal cards don't)
    mine_low = popcount(mine & _below(highest(below)))
    p = low / (low + 2 * high + 1) * fp[T_PROTECT + contract] ** np.float64(mine_low)
    p += 0.001 * r
    return p * (_future_trick_pen(ip, fp, out, contract, s, r) + _pen(ip, bit(c), contract)) * fp[T_FUTURE_WEIGHT]


@_kernel
def _future_trick_pen(ip, fp, out, contract, s, r):
    """Expected cost of a later trick won by rank ``r`` of suit ``s``: the trick itself,
    the hearts / queen / K♥ the others follow with or drop on it (FUTURE_DUMP when void,
    QUEEN_FALL and KING_FALL under a higher card)."""
    if contract == C_NO_TRICKS:
        return np.float64(ip[P_TRICK])
    if contract == C_NO_LAST_TWO:
        return (ip[P_LAST_TWO] + ip[P_LAST_TWO + 1]) / 2
    if contract == C_NO_HEARTS:
        h_out = out & HEARTS_SET
        if not h_out:
            return 0.0
        if s == HEARTS:  # the others follow with hearts
            e = ip[P_HEART] * min(3, popcount(h_out))
            if _has_rank(h_out, ACE_OF_HEARTS) and r < ACE:
                e += ip[P_ACE_HEART] - ip[P_HEART]
            return np.float64(e)
        return fp[T_FUTURE_DUMP + C_NO_HEARTS] * _pen(ip, h_out, C_NO_HEARTS) / popcount(h_out)
    if contract == C_NO_QUEENS:
        q_out = out & QUEENS_SET
        if not q_out:
            return 0.0
        e = 0.0
        if _has_rank(q_out, NUM_RANKS * s + QUEEN) and r > QUEEN:  # the queen may fall under it
            e += fp[T_QUEEN_FALL] * ip[P_QUEEN]
        if q_out & ~_suit_mask(s):
            e += fp[T_FUTURE_DUMP + C_NO_QUEENS] * ip[P_QUEEN]
        return e
    if contract == C_BARBU:
        if not _has_rank(out, KING_OF_HEARTS):
            return 0.0
        if s == HEARTS:
            if r == ACE:
                return fp[T_KING_FALL] * ip[P_KING]
            return fp[T_FUTURE_DUMP + C_BARBU] * 0.5 * ip[P_KING] / 4
        return fp[T_FUTURE_DUMP + C_BARBU] * ip[P_KING] / 4
    return 0.0


@_kernel
def _play_avoid(ip, fp, hand, cards, out, contract, tn, cl, n_after, led, win, trick_mask):
    """The negative contracts: each legal card scored as chance it wins the trick x what
    the trick would cost, less ``_danger`` (the future risk it removes), the lowest
    score played.

    * leading: cost = the trick, the card's own penalty, what void players may drop
      (``_dump_risk``), what followers may add (``_follow_risk``); plus LEAD_LENGTH per
      card held in its suit (short suits first); ties to the lower rank;
    * following: a card under the winner cannot win; a winning card's chance is
      ``_p_win``; a penalty card handed to someone else counts GIVE against itself;
    * void: the card with the greatest danger and penalty (handed over: GIVE)."""
    base = _base_cost(ip, contract, tn)
    best = -1
    best_v = 1e18
    if led < 0:  # leading
        # The cards come suit by suit; a suit's dump risk is computed once.
        risk_suit = -1
        risk = 0.0
        rest = cards
        while rest:
            c = lowest(rest)
            rest &= rest - U1
            s = c // NUM_RANKS
            p = _p_win(out, cl, 3, c)
            if s != risk_suit:
                risk_suit = s
                risk = _dump_risk(ip, fp, out, contract, cl, 3, s)
            cost = base + _pen(ip, bit(c), contract) + risk
            cost += _follow_risk(ip, fp, out, contract, cl, 3, c)
            v = p * cost - _danger(ip, fp, hand, out, contract, c) + fp[T_LEAD_LENGTH] * popcount(hand & _suit_mask(s))
            if v < best_v - 1e-9 or (abs(v - best_v) <= 1e-9 and c % NUM_RANKS < best % NUM_RANKS):
                best = c
                best_v = v
        return best
    now = base + _pen(ip, trick_mask, contract)
    follow = cards & _suit_mask(led)
    m = n_after
    if follow:
        risk = _dump_risk(ip, fp, out, contract, cl, m, led)
        rest = follow
        while rest:
            c = lowest(rest)
            rest &= rest - U1
            if c < win:
                p = 0.0
            else:
                p = _p_win(out, cl, m, c) if m > 0 else 1.0
            pen = np.float64(_pen(ip, bit(c), contract))
            if p > 0.0 and m > 0:
                pen += _follow_risk(ip, fp, out, contract, cl, m, c)
            v = p * (now + risk + pen) - (1.0 - p) * pen * fp[T_GIVE] - _danger(ip, fp, hand, out, contract, c)
            if v < best_v - 1e-9:
                best = c
                best_v = v
        return best
    # void: discard the card whose risk is the greatest
    rest = cards
    while rest:
        c = lowest(rest)
        rest &= rest - U1
        v = -_danger(ip, fp, hand, out, contract, c) - _pen(ip, bit(c), contract) * fp[T_GIVE]
        if v < best_v - 1e-9:
            best = c
            best_v = v
    return best


@_kernel
def _play_shed(ip, fp, hand, cards, out, contract):
    """No Last Two before the last tricks: get rid of the card most likely to win later
    (greatest ``_danger``, higher ranks first)."""
    best = -1
    best_v = -1e18
    rest = cards
    while rest:
        c = lowest(rest)
        rest &= rest - U1
        v = _danger(ip, fp, hand, out, contract, c) + 0.01 * (c % NUM_RANKS)
        if v > best_v:
            best = c
            best_v = v
    return best


# ---------------------------------------------------------------------- Trumps


@_kernel
def _is_master(out, c):
    """No outstanding card of c's suit is higher."""
    return (_suit(out, c // NUM_RANKS) >> np.uint64(c % NUM_RANKS + 1)) == U0


@_kernel
def _play_trumps(hand, cards, out, trump, led, win, n_after):
    """Leading: draw trumps with the master trump while others hold trumps; else cash the
    side master of the suit the others hold most of (while they still hold trumps, only
    in a suit with three or more out); else lead low from the shortest side suit (to ruff
    later), a low trump last. Following: win as cheaply as possible when last, else with
    a master, else with the lowest trump, else with the strongest winning card; without a
    winner, ``_lowest_discard``."""
    tmask = _suit_mask(trump)
    out_t = out & tmask
    if led < 0:
        my_t = cards & tmask
        if my_t and out_t:
            top = highest(my_t)
            if _is_master(out, top):
                return top
        # cash a side master
        best = -1
        best_v = -1e9
        for s in range(NUM_SUITS):
            if s == trump:
                continue
            mine = cards & _suit_mask(s)
            if not mine:
                continue
            top = highest(mine)
            if _is_master(out, top):
                n_out = popcount(out & _suit_mask(s))
                if out_t:
                    v = n_out - (3 if n_out < 3 else 0)
                else:
                    v = n_out + 1
                if v > best_v:
                    best = top
                    best_v = v
        if best >= 0 and best_v > 0:
            return best
        # lead low from the shortest side suit (to ruff later), else a low trump
        best = -1
        best_v = 1e9
        for s in range(NUM_SUITS):
            mine = cards & _suit_mask(s)
            if not mine:
                continue
            if s == trump:
                v = np.float64(50 + popcount(mine))
            else:
                v = popcount(mine) * 2 + (10 if (hand & tmask) == U0 else 0) - popcount(out & _suit_mask(s)) * 0.1
            if v < best_v:
                best = lowest(mine)
                best_v = v
        return best
    winning_trump = win // NUM_RANKS == trump
    first_beat = -1
    last_beat = -1
    first_master = -1
    rest = cards
    while rest:
        c = lowest(rest)
        rest &= rest - U1
        if (c // NUM_RANKS == win // NUM_RANKS and c > win) or (c // NUM_RANKS == trump and not winning_trump):
            if first_beat < 0:
                first_beat = c
            last_beat = c
            if first_master < 0 and _is_master(out, c):
                first_master = c
    if first_beat >= 0:
        if n_after == 0:
            return first_beat  # cheapest winner
        if first_master >= 0:
            return first_master
        if first_beat // NUM_RANKS == trump:
            return first_beat
        return last_beat  # the strongest card that beats the trick, most likely to hold
    return _lowest_discard(hand, cards, out, trump)


@_kernel
def _lowest_discard(hand, cards, out, trump):
    """The least useful card: lowest, from the shortest non-trump suit, sparing masters."""
    best = -1
    best_v = 1e9
    rest = cards
    while rest:
        c = lowest(rest)
        rest &= rest - U1
        s = c // NUM_RANKS
        r = c % NUM_RANKS
        v = r * 3 + popcount(hand & _suit_mask(s)) + (40 if s == trump else 0)
        if not (_suit(out, s) >> np.uint64(r + 1)):
            v += 20  # a master: keep it
        if v < best_v:
            best = c
            best_v = v
    return best


# ---------------------------------------------------------------------- Domino


@_kernel
def _play_domino(obs, fp, cards):
    """The card that opens the way to our own cards beyond it (furthest run first:
    DOM_FAR per rank of distance, DOM_COUNT per card); with none, the card that frees the
    fewest cards of the others."""
    hand = _row(obs, O_HAND)
    out = FULL & ~hand & ~_played(obs)
    r0 = _onehot(obs, O_RANK, NUM_RANKS)
    best = -1
    best_v = -1e18
    rest = cards
    while rest:
        c = lowest(rest)
        rest &= rest - U1
        s = c // NUM_RANKS
        k = c % NUM_RANKS
        mine = _suit(hand, s)
        others = _suit(out, s)
        bk = np.uint64(k + 1)
        if k == r0:
            beyond = mine & ~bit(k)
            blocked = others
        elif k > r0:
            beyond = mine >> bk << bk
            blocked = others >> bk << bk
        else:
            beyond = mine & _below(k)
            blocked = others & _below(k)
        if beyond:
            far = max(highest(beyond) - k, k - lowest(beyond))
            v = 100 + fp[T_DOM_FAR] * far + fp[T_DOM_COUNT] * popcount(beyond)
        else:
            v = np.float64(-popcount(blocked))
        if v > best_v:
            best = c
            best_v = v
    return best


# ---------------------------------------------------------------------- the disk cache

# A compilation cached for another observation layout is dropped and made afresh (the policy
# of every kernel module: ``barbu_env.game._bits.refresh_stale_cache``).
refresh_stale_cache(globals(), layout, LAYOUT)
