"""Numba kernels of the ``heuristic`` agent: ``HeuristicAgent.act`` for a whole batch of
observations in one call (``HeuristicAgent.act_batch``).

This is ``heuristic.py`` rewritten over uint64 card sets, rule for rule and under the
same function names (``_declare``, ``_double``, ``_play_avoid``, ``_danger`` ...), so the
two can be read side by side. Every float is computed as the Python code computes it:
the same operations in the same order (``a * b * c / d`` as ``((a * b) * c) / d``, an
int added to a float where Python adds one), powers with a float exponent (libm's
``pow``, as Python's ``float ** int``; numba's integer-exponent power multiplies by
squaring and rounds differently), the features' dot product summed as Python's
``sum`` sums it, and the same comparisons and tie-breaking. The chosen action is
therefore exactly ``act``'s: ``tests/test_heuristic_batch.py`` plays seeded games under
every rules preset and compares the two on every decision.

No number of the heuristic is baked in here. The point values and tunables arrive as
arrays built by ``heuristic._kernel_params`` (indices ``P_*`` for the int64 array ``ip``,
``T_*`` for the float64 array ``fp``; the model weights as ``weights[2, 7, 38]``: the
expected-raw-score model, then the versus-declarer model), so that a change to
``heuristic.py``'s constants changes both and a compilation cached on disk never goes
stale. Only the observation layout is written out as literal offsets (``O_*``), checked
against ``observation.OFFSETS`` on import. A change to a rule itself (not a constant)
must be made in both files; the test finds the decisions where they differ.

As in ``barbu_env._kernels``, every function is compiled with ``cache=True`` and without
reference counting (``_nrt=False``: they allocate nothing; the caller passes the one
scratch array, ``feat``), and card sets are uint64 with ``np.uint64`` constants
(``uint64 op int64`` is float64 in numba).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.core.extending import intrinsic
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from ..observation import OFFSETS

# ---------------------------------------------------------------------- layout

O_HAND, O_TRICK, O_PLAYED = 0, 52, 260
O_PHASE, O_CONTRACT, O_TRUMP, O_RANK, O_DECL, O_DOUBLED = 728, 735, 742, 746, 759, 763
O_LEADER, O_TRICK_NO, O_CARDS_LEFT = 863, 867, 904
OBS_DIM = 924
NUM_ACTIONS = 85
NUM_FEATURES = 38


def _check_layout() -> None:
    """The literal offsets agree with observation.OFFSETS."""
    starts = {
        "hand": O_HAND,
        "trick": O_TRICK,
        "played": O_PLAYED,
        "phase": O_PHASE,
        "contract": O_CONTRACT,
        "trump": O_TRUMP,
        "domino_rank": O_RANK,
        "declarer": O_DECL,
        "doubled": O_DOUBLED,
        "leader": O_LEADER,
        "trick_number": O_TRICK_NO,
        "cards_left": O_CARDS_LEFT,
    }
    actual = {name: OFFSETS[name][0] for name in starts}
    if actual != starts or max(end for _, end, _ in OFFSETS.values()) != OBS_DIM:
        raise ImportError(
            "barbu_env.agents._heuristic_kernels' observation offsets no longer match "
            f"barbu_env.observation.SLICES; update the O_* constants (kernels {starts}, observation {actual})"
        )


_check_layout()

# ---------------------------------------------------------------------- parameters

# ip (int64): the agent's point values (positive penalties), as HeuristicAgent holds them.
P_TRICK = 0  # trick_pts
P_HEART = 1  # heart_pts
P_ACE_HEART = 2  # ace_heart_pts
P_QUEEN = 3  # queen_pts
P_KING = 4  # king_pts
P_LAST_TWO = 5  # +2: last_two_pts
P_TOTAL = 7  # +7: _TOTAL[c](agent) per contract
P_SHED_UNTIL = 14  # NL2_SHED_UNTIL
P_COMPENSATED_SUM = 15  # 1 where Python's sum() of floats is compensated (3.12+)
NUM_INT_PARAMS = 16

# fp (float64): the module tunables and the declaring model's per-contract constants.
T_DUMP_WILL = 0
T_FUTURE_WEIGHT = 1
T_GIVE = 2
T_QUEEN_FALL = 3
T_KING_FALL = 4
T_FOLLOW_FALL = 5
T_FUTURE_DUMP = 6  # +4
T_PROTECT = 10  # +5
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

# ---------------------------------------------------------------------- constants

U0 = np.uint64(0)
U1 = np.uint64(1)
FULL = np.uint64((1 << 52) - 1)
S13 = np.uint64(0x1FFF)
HEARTS = 2
HEARTS_MASK = np.uint64(0x1FFF << 26)
KH, AH = 37, 38
QUEEN = 10
QUEENS = np.uint64(sum(1 << (13 * s + QUEEN) for s in range(4)))
RANK_COLUMN = np.uint64(0x0008004002001)  # one card of each suit at rank 0
NT, NH, NQ, BARBU, NL2, TRUMPS, DOMINO = range(7)

_kernel = njit(cache=True, _nrt=False)


# ---------------------------------------------------------------------- bits


@intrinsic
def _ctpop(typingctx, x):
    """Population count (LLVM's ctpop)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@_kernel
def _pc(x):
    """Number of cards in a set (``int.bit_count``)."""
    return np.int64(_ctpop(x))


@_kernel
def _hi(x):
    """Highest card of a set, -1 if empty (heuristic._hi)."""
    return 63 - np.int64(leading_zeros(x))


@_kernel
def _lo(x):
    """Lowest card of a set, -1 if empty (heuristic._lo)."""
    if x == U0:
        return -1
    return np.int64(trailing_zeros(x))


@_kernel
def _bit(c):
    return U1 << np.uint64(c)


@_kernel
def _below(r):
    """The ranks (or cards) below ``r``: ``(1 << r) - 1``."""
    return (U1 << np.uint64(r)) - U1


@_kernel
def _suit_mask(s):
    """heuristic.SUIT[s]; a negative s indexes from the end, as a tuple does."""
    return S13 << np.uint64(13 * (s & 3))


@_kernel
def _suit(x, s):
    """The 13 ranks of suit s in the set x: ``(x >> 13 * s) & S13``."""
    return (x >> np.uint64(13 * s)) & S13


@_kernel
def _onehot(obs, i, start, n):
    for k in range(n):
        if obs[i, start + k] > 0.5:
            return k
    return -1


@_kernel
def _row(obs, i, start):
    """A 52-value card row of observation i as a card set (values > 0.5)."""
    x = U0
    for k in range(52):
        if obs[i, start + k] > 0.5:
            x |= U1 << np.uint64(k)
    return x


@_kernel
def _played(obs, i):
    """Every card played so far in this hand, by anyone (the four ``played`` rows)."""
    return (
        _row(obs, i, O_PLAYED)
        | _row(obs, i, O_PLAYED + 52)
        | _row(obs, i, O_PLAYED + 104)
        | _row(obs, i, O_PLAYED + 156)
    )


# ---------------------------------------------------------------------- entry point


@_kernel
def heuristic_actions(obs, masks, ip, fp, weights, feat, actions):
    """``actions[i] = HeuristicAgent.act`` of observation ``obs[i]`` (float [N, 924]) with
    legal actions ``masks[i]`` (uint8 [N, 85], nonzero: legal). ``feat`` is a float64
    scratch array of NUM_FEATURES values."""
    for i in range(obs.shape[0]):
        actions[i] = _act(obs, masks, ip, fp, weights, feat, i)


@_kernel
def _act(obs, masks, ip, fp, weights, feat, i):
    n_legal = 0
    first = -1
    cards = U0
    for a in range(NUM_ACTIONS):
        if masks[i, a]:
            n_legal += 1
            if first < 0:
                first = a
            if a < 52:
                cards |= U1 << np.uint64(a)
    if n_legal <= 1:  # zero or one legal action
        return max(first, 0)
    phase = _onehot(obs, i, O_PHASE, 7)
    if phase == 4:
        a = _play_trick(obs, i, ip, fp, cards)
    elif phase == 5:
        a = _play_domino(obs, i, fp, cards)
    elif phase == 3:
        a = _double(obs, masks, ip, fp, weights, feat, i, _row(obs, i, O_HAND))
    elif phase == 0:
        a = _declare(masks, ip, fp, weights, feat, i, _row(obs, i, O_HAND))
    elif phase == 1:
        a = 59 + _best_trump(_row(obs, i, O_HAND))
    elif phase == 2:
        a = 63 + _best_domino_rank(_row(obs, i, O_HAND), fp)
    else:
        a = -1
    if a < 0 or a >= NUM_ACTIONS or not masks[i, a]:  # never happens by design; stay legal anyway
        a = first
    return a


# ---------------------------------------------------------------------- declaring


@_kernel
def _declare(masks, ip, fp, weights, feat, i, hand):
    later = -1  # hands still to declare after this one
    for c in range(7):
        if masks[i, 52 + c]:
            later += 1
    if later < 0:  # _EXPECTED_MAX[-1]
        later += 7
    keep = fp[T_OPTION_VALUE] * fp[T_EXPECTED_MAX + later]
    best = -1
    best_v = -1e9
    for c in range(7):
        if masks[i, 52 + c]:
            v = _contract_value(ip, fp, weights, feat, hand, c) - keep * fp[T_SPREAD + c]
            if v > best_v:
                best = c
                best_v = v
    return 52 + best


@_kernel
def _contract_value(ip, fp, weights, feat, hand, c):
    _hand_features(fp, feat, hand, c, True, -1, -1)
    return _dot(ip, weights, 0, c, feat) - fp[T_AVERAGE + c]


@_kernel
def _dot(ip, weights, model, c, feat):
    """``heuristic._dot(weights[model][c], features)``: Python's ``sum`` of the products,
    in order from index 0: plain left-to-right addition, or (Python 3.12+) Neumaier's
    compensated sum as CPython's ``sum`` does it for floats."""
    w = weights[model, c]
    total = 0.0 + w[0] * feat[0]
    if not ip[P_COMPENSATED_SUM]:
        for k in range(1, NUM_FEATURES):
            total += w[k] * feat[k]
        return total
    comp = 0.0
    for k in range(1, NUM_FEATURES):
        x = w[k] * feat[k]
        t = total + x
        if abs(total) >= abs(x):
            comp += (total - t) + x
        else:
            comp += (x - t) + total
        total = t
    if comp != 0.0 and np.isfinite(comp):
        total += comp
    return total


@_kernel
def _hand_features(fp, feat, hand, c, declarer, trump, rank):
    if c == TRUMPS and trump < 0:
        trump = _best_trump(hand)
    if c == DOMINO and rank < 0:
        rank = _best_domino_rank(hand, fp)
    _features(feat, hand, c, declarer, trump, rank)


@_kernel
def _best_trump(hand):
    best = 0
    best_v = -1e9
    for s in range(4):
        x = _suit(hand, s)
        v = (
            1.5 * _pc(x)
            + 4 * np.int64((x >> np.uint64(12)) & U1)
            + 3 * np.int64((x >> np.uint64(11)) & U1)
            + 2 * np.int64((x >> np.uint64(10)) & U1)
            + np.int64((x >> np.uint64(9)) & U1)
        )
        if v > best_v:
            best = s
            best_v = v
    return best


@_kernel
def _best_domino_rank(hand, fp):
    best = 0
    best_v = 1e9
    for r in range(13):
        v = _domino_gap_cost(hand, r) - fp[T_RANK_BONUS] * _pc((hand >> np.uint64(r)) & RANK_COLUMN)
        if v < best_v:
            best = r
            best_v = v
    return best


@_kernel
def _domino_gap_cost(hand, r):
    cost = 0
    for s in range(4):
        mine = _suit(hand, s)
        if not mine:
            continue
        gaps = 0
        for k in range(r, 13):
            if (mine >> np.uint64(k)) & U1:
                cost += gaps
            else:
                gaps += 1
        gaps = 0
        for k in range(r - 1, -1, -1):
            if (mine >> np.uint64(k)) & U1:
                cost += gaps
            else:
                gaps += 1
    return cost


@_kernel
def _rank_count(s0, s1, s2, s3, r):
    """Cards of rank r in the four suits (heuristic._features' ``n[r]``)."""
    b = np.uint64(r)
    return np.int64(((s0 >> b) & U1) + ((s1 >> b) & U1) + ((s2 >> b) & U1) + ((s3 >> b) & U1))


@_kernel
def _features(feat, hand, contract, declarer, trump, rank):
    """heuristic._features, written into ``feat``."""
    s0 = _suit(hand, 0)
    s1 = _suit(hand, 1)
    s2 = _suit(hand, 2)
    s3 = _suit(hand, 3)
    voids = singles = doubles = longs = unguarded = 0
    rank_sum = 0
    q_guard = q_bare = 0
    kings_exposed = 0.0
    for s in range(4):
        x = _suit(hand, s)
        k = _pc(x)
        voids += k == 0
        singles += k == 1
        doubles += k == 2
        longs += max(0, k - 4)
        high = _pc(x >> np.uint64(9))
        low = _pc(x & np.uint64(0x1F))
        unguarded += max(0, high - low)
        for r in range(13):
            if (x >> np.uint64(r)) & U1:
                rank_sum += r
        if (x >> np.uint64(QUEEN)) & U1:
            lower = _pc(x & np.uint64(0x3FF))
            q_guard += min(lower, 4)
            q_bare += lower <= 1
        elif x >> np.uint64(11):
            kings_exposed += _pc(x >> np.uint64(11)) * (1.0 if _pc(x & np.uint64(0x3FF)) <= 2 else 0.5)
    h = s2
    has_kh = np.int64((h >> np.uint64(11)) & U1)
    h_low = _pc(h & np.uint64(0x7FF))
    feat[0] = 1.0
    feat[1] = 1.0 if declarer else 0.0
    feat[2] = _rank_count(s0, s1, s2, s3, 12)
    feat[3] = _rank_count(s0, s1, s2, s3, 11)
    feat[4] = _rank_count(s0, s1, s2, s3, 10)
    feat[5] = _rank_count(s0, s1, s2, s3, 9)
    feat[6] = _rank_count(s0, s1, s2, s3, 8)
    feat[7] = (
        _rank_count(s0, s1, s2, s3, 0)
        + _rank_count(s0, s1, s2, s3, 1)
        + _rank_count(s0, s1, s2, s3, 2)
        + _rank_count(s0, s1, s2, s3, 3)
    )
    feat[8] = voids
    feat[9] = singles
    feat[10] = doubles
    feat[11] = longs
    feat[12] = unguarded
    feat[13] = rank_sum / 13.0
    feat[14] = _pc(h)
    feat[15] = np.int64((h >> np.uint64(12)) & U1)
    feat[16] = has_kh
    feat[17] = has_kh * h_low
    feat[18] = has_kh * (1 if h_low <= 1 else 0)
    feat[19] = _pc(h >> np.uint64(9))
    feat[20] = _pc(h & np.uint64(0x1F))
    feat[21] = q_guard
    feat[22] = q_bare
    feat[23] = kings_exposed
    if contract == TRUMPS and trump >= 0:
        t = _suit(hand, trump)
        side_aces = side_kings = side_short = 0
        for s in range(4):
            if s != trump:
                x = _suit(hand, s)
                side_aces += np.int64((x >> np.uint64(12)) & U1)
                side_kings += np.int64((x >> np.uint64(11)) & U1)
                side_short += _pc(x) <= 1
        n_t = _pc(t)
        feat[24] = n_t
        feat[25] = np.int64((t >> np.uint64(12)) & U1)
        feat[26] = np.int64((t >> np.uint64(11)) & U1)
        feat[27] = np.int64((t >> np.uint64(10)) & U1)
        feat[28] = _pc(t >> np.uint64(9))
        feat[29] = side_aces
        feat[30] = side_kings
        feat[31] = side_short
        extra = max(0, n_t - 4)
        feat[32] = extra * extra
    else:
        for k in range(24, 33):
            feat[k] = 0.0
    if contract == DOMINO and rank >= 0:
        b = np.uint64(rank)
        at = np.int64(((s0 >> b) & U1) + ((s1 >> b) & U1) + ((s2 >> b) & U1) + ((s3 >> b) & U1))
        spread = 0
        for r in range(13):
            spread += abs(r - rank) * _rank_count(s0, s1, s2, s3, r)
        feat[33] = _domino_gap_cost(hand, rank)
        feat[34] = at
        feat[35] = spread / 13.0
        feat[36] = at if declarer else 0
        feat[37] = 1.0 if declarer and at == 0 else 0.0
    else:
        for k in range(33, 38):
            feat[k] = 0.0


# ---------------------------------------------------------------------- doubling


@_kernel
def _double(obs, masks, ip, fp, weights, feat, i, hand):
    allowed = 0
    required = 7
    for b in range(8):
        if masks[i, 76 + b]:
            allowed |= b
            required &= b
    decl = _onehot(obs, i, O_DECL, 4)
    contract = _onehot(obs, i, O_CONTRACT, 7)
    trump = _onehot(obs, i, O_TRUMP, 4)
    rank = _onehot(obs, i, O_RANK, 13)
    _hand_features(fp, feat, hand, contract, decl == 0, trump, rank)
    ci = contract if contract >= 0 else contract + 7  # a tuple's index -1
    me = _dot(ip, weights, 0, ci, feat)
    other = (ip[P_TOTAL + ci] - me) / 3.0  # average of the other three
    vs_declarer = _dot(ip, weights, 1, ci, feat) if decl != 0 else 0.0
    want = 0
    for k in range(3):
        j = k + 1
        if not (allowed >> k) & 1:
            continue
        edge = vs_declarer if j == decl else me - other
        # j already named us: naming j back is a redouble.
        margin = fp[T_REDOUBLE_MARGIN] if obs[i, O_DOUBLED + 4 * j] > 0.5 else fp[T_DOUBLE_MARGIN]
        if edge > margin:
            want |= 1 << k
    return 76 + ((want & allowed) | required)


# ---------------------------------------------------------------------- trick play
#
# heuristic._Trick's facts travel as arguments: hand, cards (legal cards), out (cards
# neither held nor played), contract, tn (trick number), cl (cards left per relative
# seat, a 4-tuple), trump, led, win, trick_mask; a list of relative seats ``players`` is
# always seats 1 .. m and travels as m.


@_kernel
def _play_trick(obs, i, ip, fp, cards):
    hand = _row(obs, i, O_HAND)
    t0 = _row(obs, i, O_TRICK)
    t1 = _row(obs, i, O_TRICK + 52)
    t2 = _row(obs, i, O_TRICK + 104)
    t3 = _row(obs, i, O_TRICK + 156)
    trick = (t0, t1, t2, t3)
    played = _played(obs, i)
    out = FULL & ~hand & ~played
    contract = _onehot(obs, i, O_CONTRACT, 7)
    leader = _onehot(obs, i, O_LEADER, 4)
    tn = _onehot(obs, i, O_TRICK_NO, 13)
    n_played = (4 - leader) & 3
    cl = (
        _cards_left(obs, i, 0),
        _cards_left(obs, i, 1),
        _cards_left(obs, i, 2),
        _cards_left(obs, i, 3),
    )
    n_after = 3 - n_played
    trump = _onehot(obs, i, O_TRUMP, 4) if contract == TRUMPS else -1
    mask = U0
    if n_played:
        lead_card = _hi(trick[leader & 3])
        led = lead_card // 13
        win = lead_card
        for k in range(1, n_played):
            c = _hi(trick[(leader + k) & 3])
            if (c // 13 == win // 13 and c > win) or (c // 13 == trump and win // 13 != trump):
                win = c
        for k in range(n_played):
            mask |= trick[(leader + k) & 3]
    else:
        led = -1
        win = -1
    if contract == TRUMPS:
        return _play_trumps(hand, cards, out, trump, led, win, n_after)
    if contract == NL2 and tn < ip[P_SHED_UNTIL]:
        return _play_shed(ip, fp, hand, cards, out, contract)
    return _play_avoid(ip, fp, hand, cards, out, contract, tn, cl, n_after, led, win, mask)


@_kernel
def _cards_left(obs, i, p):
    """``round(small[_CARDSLEFT + p] * 13)``: the float32 value times 13 in float64,
    rounded half to even."""
    return np.int64(np.rint(np.float64(obs[i, O_CARDS_LEFT + p]) * 13.0))


# --- negative contracts


@_kernel
def _pen(ip, m, contract):
    """Penalty points of a set of cards for whoever takes them."""
    if contract == NH:
        h = m & HEARTS_MASK
        if not h:
            return 0
        a = np.int64((h >> np.uint64(AH)) & U1)
        return ip[P_HEART] * (_pc(h) - a) + ip[P_ACE_HEART] * a
    if contract == NQ:
        return ip[P_QUEEN] * _pc(m & QUEENS)
    if contract == BARBU:
        return ip[P_KING] if (m >> np.uint64(KH)) & U1 else 0
    return 0


@_kernel
def _base_cost(ip, contract, tn):
    if contract == NT:
        return ip[P_TRICK]
    if contract == NL2:
        if tn == 11:
            return ip[P_LAST_TWO]
        if tn == 12:
            return ip[P_LAST_TWO + 1]
    return 0


@_kernel
def _dump_risk(ip, fp, out, contract, cl, m, suit):
    """Expected penalty that players 1 .. m drop on this trick when void in ``suit``."""
    if contract == NT or contract == NL2:
        return 0.0
    if contract == NH:
        pen_out = out & HEARTS_MASK
    elif contract == NQ:
        pen_out = out & QUEENS
    else:
        pen_out = out & _bit(KH)
    pen_out &= ~_suit_mask(suit)
    if not pen_out:
        return 0.0
    u = _pc(out)
    k = _pc(out & _suit_mask(suit))
    n_pen = _pc(pen_out)
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
    total = 0
    for p in range(1, m + 1):
        total += cl[p]
    return total


@_kernel
def _follow_risk(ip, fp, out, contract, cl, m, c):
    """Expected penalty that players 1 .. m (after us) add to the trick by following suit,
    if card ``c`` wins it."""
    s = c // 13
    r = c % 13
    if contract == NH:
        if s != HEARTS:
            return 0.0
        h = out & HEARTS_MASK
        k = _pc(h)
        if not k:
            return 0.0
        u = _pc(out)
        e = 0.0
        for q in range(1, m + 1):
            frac = min(1.0, cl[q] / u)
            e += (1.0 - (1.0 - frac) ** np.float64(k)) * ip[P_HEART]
        if (h >> np.uint64(AH)) & U1:
            e += (ip[P_ACE_HEART] - ip[P_HEART]) * fp[T_FOLLOW_FALL] * _sum_left(cl, m) / u
        return e
    if contract == NQ:
        q = 13 * s + QUEEN
        if r > QUEEN and (out >> np.uint64(q)) & U1:
            return fp[T_FOLLOW_FALL] * ip[P_QUEEN] * _sum_left(cl, m) / _pc(out)
        return 0.0
    if contract == BARBU and c == AH and (out >> np.uint64(KH)) & U1:
        return fp[T_FOLLOW_FALL] * ip[P_KING] * _sum_left(cl, m) / _pc(out)
    return 0.0


@_kernel
def _p_win(out, cl, m, c):
    """Chance that card ``c`` is not beaten by players 1 .. m, given it beats the trick
    so far."""
    s = c // 13
    r = c % 13
    o = _suit(out, s)
    h = _pc(o >> np.uint64(r + 1))
    if h == 0:
        return 1.0
    low = _pc(o & _below(r))
    u = _pc(out)
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
    """Future cost of keeping card ``c`` in hand."""
    s = c // 13
    r = c % 13
    o = _suit(out, s)
    below = o & _below(r)
    low = _pc(below)
    if not low:
        return 0.0
    high = _pc(o >> np.uint64(r + 1))
    mine = _suit(hand, s)
    # own lower cards protect c only if an outstanding card lies between (equal cards don't)
    mine_low = _pc(mine & _below(_hi(below)))
    p = low / (low + 2 * high + 1) * fp[T_PROTECT + contract % 5] ** np.float64(mine_low)
    p += 0.001 * r
    return p * (_future_trick_pen(ip, fp, out, contract, s, r) + _pen(ip, _bit(c), contract)) * fp[T_FUTURE_WEIGHT]


@_kernel
def _future_trick_pen(ip, fp, out, contract, s, r):
    """Expected cost of a later trick won by rank ``r`` of suit ``s``."""
    if contract == NT:
        return np.float64(ip[P_TRICK])
    if contract == NL2:
        return (ip[P_LAST_TWO] + ip[P_LAST_TWO + 1]) / 2
    if contract == NH:
        h_out = out & HEARTS_MASK
        if not h_out:
            return 0.0
        if s == HEARTS:  # the others follow with hearts
            e = ip[P_HEART] * min(3, _pc(h_out))
            if (h_out >> np.uint64(AH)) & U1 and r < 12:
                e += ip[P_ACE_HEART] - ip[P_HEART]
            return np.float64(e)
        return fp[T_FUTURE_DUMP + NH] * _pen(ip, h_out, NH) / _pc(h_out)
    if contract == NQ:
        q_out = out & QUEENS
        if not q_out:
            return 0.0
        e = 0.0
        if (q_out >> np.uint64(13 * s + QUEEN)) & U1 and r > QUEEN:  # the queen may fall under it
            e += fp[T_QUEEN_FALL] * ip[P_QUEEN]
        if q_out & ~_suit_mask(s):
            e += fp[T_FUTURE_DUMP + NQ] * ip[P_QUEEN]
        return e
    if contract == BARBU:
        if not (out >> np.uint64(KH)) & U1:
            return 0.0
        if s == HEARTS:
            if r == 12:
                return fp[T_KING_FALL] * ip[P_KING]
            return fp[T_FUTURE_DUMP + BARBU] * 0.5 * ip[P_KING] / 4
        return fp[T_FUTURE_DUMP + BARBU] * ip[P_KING] / 4
    return 0.0


@_kernel
def _play_avoid(ip, fp, hand, cards, out, contract, tn, cl, n_after, led, win, trick_mask):
    base = _base_cost(ip, contract, tn)
    best = -1
    best_v = 1e18
    if led < 0:  # leading
        # The cards come suit by suit; a suit's dump risk is computed once (the same value
        # act computes for each card of the suit).
        risk_suit = -1
        risk = 0.0
        rest = cards
        while rest:
            c = _lo(rest)
            rest &= rest - U1
            s = c // 13
            p = _p_win(out, cl, 3, c)
            if s != risk_suit:
                risk_suit = s
                risk = _dump_risk(ip, fp, out, contract, cl, 3, s)
            cost = base + _pen(ip, _bit(c), contract) + risk
            cost += _follow_risk(ip, fp, out, contract, cl, 3, c)
            v = p * cost - _danger(ip, fp, hand, out, contract, c) + fp[T_LEAD_LENGTH] * _pc(hand & _suit_mask(s))
            if v < best_v - 1e-9 or (abs(v - best_v) <= 1e-9 and c % 13 < best % 13):
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
            c = _lo(rest)
            rest &= rest - U1
            if c < win:
                p = 0.0
            else:
                p = _p_win(out, cl, m, c) if m > 0 else 1.0
            pen = np.float64(_pen(ip, _bit(c), contract))
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
        c = _lo(rest)
        rest &= rest - U1
        v = -_danger(ip, fp, hand, out, contract, c) - _pen(ip, _bit(c), contract) * fp[T_GIVE]
        if v < best_v - 1e-9:
            best = c
            best_v = v
    return best


@_kernel
def _play_shed(ip, fp, hand, cards, out, contract):
    """No Last Two before the last tricks: get rid of the cards most likely to win."""
    best = -1
    best_v = -1e18
    rest = cards
    while rest:
        c = _lo(rest)
        rest &= rest - U1
        v = _danger(ip, fp, hand, out, contract, c) + 0.01 * (c % 13)
        if v > best_v:
            best = c
            best_v = v
    return best


# ---------------------------------------------------------------------- Trumps


@_kernel
def _is_master(out, c):
    return (_suit(out, c // 13) >> np.uint64(c % 13 + 1)) == U0


@_kernel
def _play_trumps(hand, cards, out, trump, led, win, n_after):
    tmask = _suit_mask(trump)
    out_t = out & tmask
    if led < 0:
        my_t = cards & tmask
        if my_t and out_t:
            top = _hi(my_t)
            if _is_master(out, top):
                return top
        # cash a side master
        best = -1
        best_v = -1e9
        for s in range(4):
            if s == trump:
                continue
            mine = cards & _suit_mask(s)
            if not mine:
                continue
            top = _hi(mine)
            if _is_master(out, top):
                n_out = _pc(out & _suit_mask(s))
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
        for s in range(4):
            mine = cards & _suit_mask(s)
            if not mine:
                continue
            if s == trump:
                v = np.float64(50 + _pc(mine))
            else:
                v = _pc(mine) * 2 + (10 if (hand & tmask) == U0 else 0) - _pc(out & _suit_mask(s)) * 0.1
            if v < best_v:
                best = _lo(mine)
                best_v = v
        return best
    winning_trump = win // 13 == trump
    first_beat = -1
    last_beat = -1
    first_master = -1
    rest = cards
    while rest:
        c = _lo(rest)
        rest &= rest - U1
        if (c // 13 == win // 13 and c > win) or (c // 13 == trump and not winning_trump):
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
        if first_beat // 13 == trump:
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
        c = _lo(rest)
        rest &= rest - U1
        s = c // 13
        r = c % 13
        v = r * 3 + _pc(hand & _suit_mask(s)) + (40 if s == trump else 0)
        if not (_suit(out, s) >> np.uint64(r + 1)):
            v += 20  # a master: keep it
        if v < best_v:
            best = c
            best_v = v
    return best


# ---------------------------------------------------------------------- Domino


@_kernel
def _play_domino(obs, i, fp, cards):
    hand = _row(obs, i, O_HAND)
    played = _played(obs, i)
    out = FULL & ~hand & ~played
    r0 = _onehot(obs, i, O_RANK, 13)
    best = -1
    best_v = -1e18
    rest = cards
    while rest:
        c = _lo(rest)
        rest &= rest - U1
        s = c // 13
        k = c % 13
        mine = _suit(hand, s)
        others = _suit(out, s)
        bk = np.uint64(k + 1)
        if k == r0:
            beyond = mine & ~_bit(k)
            blocked = others
        elif k > r0:
            beyond = mine >> bk << bk
            blocked = others >> bk << bk
        else:
            beyond = mine & _below(k)
            blocked = others & _below(k)
        if beyond:
            far = max(_hi(beyond) - k, k - _lo(beyond))
            v = 100 + fp[T_DOM_FAR] * far + fp[T_DOM_COUNT] * _pc(beyond)
        else:
            v = np.float64(-_pc(blocked))
        if v > best_v:
            best = c
            best_v = v
    return best
