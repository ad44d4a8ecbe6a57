"""The ``heuristic`` player written in plain Python: the oracle the compiled player
(``barbu_env.agents.heuristic``, numba kernels in ``_heuristic_kernels``) is checked
against, decision by decision, in ``tests/test_heuristic_batch.py``.

It is the player as it was first written, over Python ints as 52-bit card sets: the
same rules, tunables and model weights (imported from the product module), computed
independently of the kernels. A change to a rule is made in the kernels and, to keep
the comparison, here.
"""

from __future__ import annotations

import numpy as np
from oracle.observation import OFFSETS

from barbu_env.agents.heuristic import (
    AVERAGE,
    DOM_COUNT,
    DOM_FAR,
    DOMINO_RANK_BONUS,
    DOUBLE_MARGIN,
    DUMP_WILL,
    EXPECTED_MAX,
    FOLLOW_FALL,
    FUTURE_DUMP,
    FUTURE_WEIGHT,
    GIVE,
    KING_FALL,
    LEAD_LENGTH,
    NL2_SHED_UNTIL,
    OPTION_VALUE,
    PROTECT,
    QUEEN_FALL,
    REDOUBLE_MARGIN,
    SPREAD,
    WEIGHTS,
    WEIGHTS_VS_DECLARER,
)
from barbu_env.game.cards import (
    ACE_OF_HEARTS,
    FULL_DECK,
    HEARTS,
    HEARTS_MASK,
    KING_OF_HEARTS,
    NUM_RANKS,
    QUEEN,
    QUEENS_MASK,
    RANK_MASK,
    SUIT_MASK,
    cards_of,
)
from barbu_env.game.constants import Contract
from barbu_env.game.rules import Rules, load_rules

# ---------------------------------------------------------------------------- constants

FULL = FULL_DECK
S13 = (1 << NUM_RANKS) - 1
SUIT = SUIT_MASK
KH, AH = KING_OF_HEARTS, ACE_OF_HEARTS
QUEENS = QUEENS_MASK
RANK_COLUMN = RANK_MASK[0]  # one card of each suit at rank 0
NT, NH, NQ, BARBU, NL2, TRUMPS, DOMINO = (int(c) for c in Contract)

# Card rows of the observation (52 values each), found by name: row indices of the hand,
# the first trick / played / taken rows (four each, by relative seat) and domino_playable.
_CARD_SLICES = ("hand", "trick", "played", "taken", "domino_playable")
assert all(OFFSETS[n][0] % 52 == 0 for n in _CARD_SLICES)
_CARD_END = max(OFFSETS[n][1] for n in _CARD_SLICES)
_R_HAND, _R_TRICK, _R_PLAYED, _R_TAKEN, _R_PLAYABLE = (OFFSETS[n][0] // 52 for n in _CARD_SLICES)
_S = min(OFFSETS[n][0] for n in OFFSETS if n not in _CARD_SLICES)  # start of the small fields
assert _S >= _CARD_END


def _off(name: str) -> int:
    return OFFSETS[name][0] - _S


_PHASE, _CONTRACT, _TRUMP, _RANK, _DECL = (_off(n) for n in ("phase", "contract", "trump", "domino_rank", "declarer"))
_DOUBLED, _LEADER, _TRICKNO, _CARDSLEFT = (_off(n) for n in ("doubled", "leader", "trick_number", "cards_left"))


def _hi(x: int) -> int:
    return x.bit_length() - 1


def _lo(x: int) -> int:
    return (x & -x).bit_length() - 1


def _onehot(small: list, start: int, n: int) -> int:
    for i in range(start, start + n):
        if small[i] > 0.5:
            return i - start
    return -1


def _hand_row(obs: np.ndarray) -> int:
    """The observer's hand as a 52-bit int."""
    a = OFFSETS["hand"][0]
    return int.from_bytes(np.packbits(obs[a : a + 52] > 0.5, bitorder="little").tobytes(), "little")


def _card_rows(obs: np.ndarray) -> list[int]:
    """The card rows of an observation as 52-bit ints (one ``np.packbits``), indexed by
    row: ``rows[_R_HAND]``, ``rows[_R_TRICK + seat]``, ``rows[_R_PLAYED + seat]`` ..."""
    big = int.from_bytes(np.packbits(obs[:_CARD_END] > 0.5, bitorder="little").tobytes(), "little")
    return [(big >> (52 * k)) & FULL for k in range(_CARD_END // 52)]


def _mask_int(mask: np.ndarray) -> int:
    return int.from_bytes(np.packbits(np.asarray(mask, dtype=np.uint8), bitorder="little").tobytes(), "little")


def _dot(w, f) -> float:
    """Summed left to right, as the kernels sum (not ``sum``, which Python 3.12+ compensates)."""
    total = 0.0
    for a, b in zip(w, f):
        total += a * b
    return total


_cards = cards_of  # the card ids of a set, ascending


# ---------------------------------------------------------------------------- the agent


class OracleHeuristic:
    """The heuristic player in plain Python (see ``barbu_env.agents.heuristic``)."""

    name = "heuristic-oracle"

    def __init__(self, seed: int = 0, rules: Rules | str | dict | None = None):
        self.seed = seed
        self.rules = load_rules(rules)
        r = self.rules
        #: penalty points (positive) per contract
        self.trick_pts = -r.no_tricks_points
        self.heart_pts = -r.no_hearts_points
        self.ace_heart_pts = -r.no_hearts_ace_points
        self.queen_pts = -r.no_queens_points
        self.king_pts = -r.barbu_points
        self.last_two_pts = (-r.no_last_two_points[0], -r.no_last_two_points[1])

    # ------------------------------------------------------------------ entry point

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        obs = observation["observation"]
        legal = _mask_int(observation["action_mask"])
        if legal & (legal - 1) == 0:  # zero or one legal action
            return max(legal.bit_length() - 1, 0)
        small = obs[_S:].tolist()
        phase = _onehot(small, _PHASE, 7)
        if phase == 4:
            a = self._play_trick(_card_rows(obs), small, legal)
        elif phase == 5:
            a = self._play_domino(_card_rows(obs), small, legal)
        elif phase == 3:
            a = self._double(_hand_row(obs), small, legal)
        elif phase == 0:
            a = self._declare(_hand_row(obs), small, legal)
        elif phase == 1:
            a = 59 + self._best_trump(_hand_row(obs))[0]
        elif phase == 2:
            a = 63 + self._best_domino_rank(_hand_row(obs))[0]
        else:
            a = -1
        if a < 0 or not (legal >> a) & 1:  # never happens by design; stay legal anyway
            a = _lo(legal)
        return a

    # ------------------------------------------------------------------ declaring

    def _declare(self, hand: int, small: list, legal: int) -> int:
        best, best_v = -1, -1e9
        later = ((legal >> 52) & 0x7F).bit_count() - 1  # hands still to declare after this one
        keep = OPTION_VALUE * EXPECTED_MAX[later]
        for c in range(7):
            if (legal >> (52 + c)) & 1:
                # A contract kept for later can go to the best of the later hands.
                v = self.contract_value(hand, c) - keep * SPREAD[c]
                if v > best_v:
                    best, best_v = c, v
        return 52 + best

    def contract_value(self, hand: int, c: int) -> float:
        """Expected raw score of this hand in contract ``c`` as declarer, less the
        contract's average (how much better than usual this hand is for ``c``)."""
        return self.expected_raw(hand, c, True) - AVERAGE[c]

    def expected_raw(self, hand: int, c: int, declarer: bool, trump: int = -1, rank: int = -1) -> float:
        """Expected raw score for the observer in contract ``c`` (a linear model of hand
        features)."""
        return _dot(WEIGHTS[c], self._hand_features(hand, c, declarer, trump, rank))

    def _hand_features(self, hand: int, c: int, declarer: bool, trump: int, rank: int) -> list[float]:
        if c == TRUMPS and trump < 0:
            trump = self._best_trump(hand)[0]
        if c == DOMINO and rank < 0:
            rank = self._best_domino_rank(hand)[0]
        return _features(hand, c, declarer, trump, rank)

    def _best_trump(self, hand: int) -> tuple[int, float]:
        best, best_v = 0, -1e9
        for s in range(4):
            x = (hand >> (13 * s)) & S13
            v = 1.5 * x.bit_count() + 4 * (x >> 12 & 1) + 3 * (x >> 11 & 1) + 2 * (x >> 10 & 1) + (x >> 9 & 1)
            if v > best_v:
                best, best_v = s, v
        return best, best_v

    def _best_domino_rank(self, hand: int) -> tuple[int, float]:
        best, best_v = 0, 1e9
        for r in range(13):
            v = _domino_gap_cost(hand, r) - DOMINO_RANK_BONUS * ((hand >> r) & RANK_COLUMN).bit_count()
            if v < best_v:
                best, best_v = r, v
        return best, best_v

    # ------------------------------------------------------------------ doubling

    def _double(self, hand: int, small: list, legal: int) -> int:
        allowed, required = 0, 7
        for b in range(8):
            if (legal >> (76 + b)) & 1:
                allowed |= b
                required &= b
        decl = _onehot(small, _DECL, 4)
        contract = _onehot(small, _CONTRACT, 7)
        trump = _onehot(small, _TRUMP, 4)
        rank = _onehot(small, _RANK, 13)
        f = self._hand_features(hand, contract, decl == 0, trump, rank)
        me = _dot(WEIGHTS[contract], f)
        other = (_TOTAL[contract](self) - me) / 3.0  # average of the other three
        vs_declarer = _dot(WEIGHTS_VS_DECLARER[contract], f) if decl != 0 else 0.0
        want = 0
        for k in range(3):
            j = k + 1
            if not (allowed >> k) & 1:
                continue
            edge = vs_declarer if j == decl else me - other
            # j already named us: naming j back is a redouble.
            margin = REDOUBLE_MARGIN if small[_DOUBLED + 4 * j] > 0.5 else DOUBLE_MARGIN
            if edge > margin:
                want |= 1 << k
        return 76 + ((want & allowed) | required)

    # ------------------------------------------------------------------ trick play

    def _play_trick(self, rows: list[int], small: list, legal: int) -> int:
        hand = rows[_R_HAND]
        trick = rows[_R_TRICK : _R_TRICK + 4]
        played = rows[_R_PLAYED] | rows[_R_PLAYED + 1] | rows[_R_PLAYED + 2] | rows[_R_PLAYED + 3]
        out = FULL & ~hand & ~played
        contract = _onehot(small, _CONTRACT, 7)
        leader = _onehot(small, _LEADER, 4)
        tn = _onehot(small, _TRICKNO, 13)
        n_played = (4 - leader) & 3
        cards_left = [round(small[_CARDSLEFT + i] * 13) for i in range(4)]
        t = _Trick()
        t.hand, t.cards, t.out, t.contract, t.tn = hand, legal & FULL, out, contract, tn
        t.n_played, t.n_after = n_played, 3 - n_played
        t.cards_left = cards_left
        t.after = list(range(1, 4 - n_played))  # relative seats still to play
        t.trump = _onehot(small, _TRUMP, 4) if contract == TRUMPS else -1
        mask = 0
        if n_played:
            lead_card = _hi(trick[leader])
            t.led = lead_card // 13
            win = lead_card
            for k in range(1, n_played):
                c = _hi(trick[(leader + k) & 3])
                if (c // 13 == win // 13 and c > win) or (c // 13 == t.trump and win // 13 != t.trump):
                    win = c
            t.win = win
            for k in range(n_played):
                mask |= trick[(leader + k) & 3]
        else:
            t.led, t.win = -1, -1
        t.trick_mask = mask
        if contract == TRUMPS:
            return _play_trumps(t)
        if contract == NL2 and tn < NL2_SHED_UNTIL:
            return self._play_shed(t)
        return self._play_avoid(t)

    # --- negative contracts

    def _pen(self, m: int, contract: int) -> int:
        """Penalty points of a set of cards for whoever takes them."""
        if contract == NH:
            h = m & HEARTS_MASK
            if not h:
                return 0
            a = (h >> AH) & 1
            return self.heart_pts * (h.bit_count() - a) + self.ace_heart_pts * a
        if contract == NQ:
            return self.queen_pts * (m & QUEENS).bit_count()
        if contract == BARBU:
            return self.king_pts if (m >> KH) & 1 else 0
        return 0

    def _base_cost(self, contract: int, tn: int) -> int:
        if contract == NT:
            return self.trick_pts
        if contract == NL2:
            if tn == 11:
                return self.last_two_pts[0]
            if tn == 12:
                return self.last_two_pts[1]
        return 0

    def _dump_risk(self, t: _Trick, players: list[int], suit: int) -> float:
        """Expected penalty that ``players`` (relative seats) drop on this trick when void
        in ``suit``."""
        contract = t.contract
        if contract in (NT, NL2):
            return 0.0
        out = t.out
        pen_out = out & (HEARTS_MASK if contract == NH else QUEENS if contract == NQ else (1 << KH))
        pen_out &= ~SUIT[suit]
        if not pen_out:
            return 0.0
        u = out.bit_count()
        k = (out & SUIT[suit]).bit_count()
        risk = 0.0
        per = self._pen(pen_out, contract) / pen_out.bit_count()
        for p in players:
            n = t.cards_left[p]
            if n <= 0 or u <= 0:
                continue
            frac = min(1.0, n / u)
            p_void = (1.0 - frac) ** k
            p_has = 1.0 - (1.0 - frac) ** pen_out.bit_count()
            risk += p_void * p_has * per * DUMP_WILL
        return risk

    def _follow_risk(self, t: _Trick, c: int, players: list[int]) -> float:
        """Expected penalty that ``players`` (after us) add to the trick by following suit,
        if card ``c`` wins it."""
        contract = t.contract
        s, r = divmod(c, 13)
        out = t.out
        if contract == NH:
            if s != HEARTS:
                return 0.0
            h = out & HEARTS_MASK
            k = h.bit_count()
            if not k:
                return 0.0
            u = out.bit_count()
            e = 0.0
            for q in players:
                frac = min(1.0, t.cards_left[q] / u)
                e += (1.0 - (1.0 - frac) ** k) * self.heart_pts
            if (h >> AH) & 1:
                e += (self.ace_heart_pts - self.heart_pts) * FOLLOW_FALL * sum(t.cards_left[q] for q in players) / u
            return e
        if contract == NQ:
            q = 13 * s + QUEEN
            if r > QUEEN and (out >> q) & 1:
                return FOLLOW_FALL * self.queen_pts * sum(t.cards_left[p] for p in players) / out.bit_count()
            return 0.0
        if contract == BARBU and c == AH and (out >> KH) & 1:
            return FOLLOW_FALL * self.king_pts * sum(t.cards_left[p] for p in players) / out.bit_count()
        return 0.0

    def _p_win(self, t: _Trick, c: int, players: list[int]) -> float:
        """Chance that card ``c`` is not beaten by ``players`` (relative seats after us),
        given it beats the trick so far."""
        s, r = divmod(c, 13)
        o = (t.out >> (13 * s)) & S13
        h = (o >> (r + 1)).bit_count()
        if h == 0:
            return 1.0
        low = (o & ((1 << r) - 1)).bit_count()
        u = t.out.bit_count()
        share = h / (h + low) if low else 1.0
        p = 1.0
        for q in players:
            n = t.cards_left[q]
            if n <= 0:
                continue
            frac = min(1.0, n / u)
            holds = 1.0 - (1.0 - frac) ** h
            p *= 1.0 - holds * share
        return p

    def _danger(self, t: _Trick, c: int) -> float:
        """Future cost of keeping card ``c`` in hand (what playing it now saves): the
        chance it wins a later trick times what that trick would cost, its own penalty
        included."""
        s, r = divmod(c, 13)
        o = (t.out >> (13 * s)) & S13
        low = (o & ((1 << r) - 1)).bit_count()
        if not low:
            return 0.0
        high = (o >> (r + 1)).bit_count()
        mine = (t.hand >> (13 * s)) & S13
        # own lower cards protect c only if an outstanding card lies between (equal cards don't)
        below = o & ((1 << r) - 1)
        mine_low = (mine & ((1 << _hi(below)) - 1)).bit_count()
        p = low / (low + 2 * high + 1) * PROTECT[t.contract] ** mine_low
        p += 0.001 * r
        return p * (self._future_trick_pen(t, s, r) + self._pen(1 << c, t.contract)) * FUTURE_WEIGHT

    def _future_trick_pen(self, t: _Trick, s: int, r: int) -> float:
        """Expected cost of a later trick won by rank ``r`` of suit ``s``."""
        contract = t.contract
        out = t.out
        if contract == NT:
            return self.trick_pts
        if contract == NL2:
            return (self.last_two_pts[0] + self.last_two_pts[1]) / 2
        if contract == NH:
            h_out = out & HEARTS_MASK
            if not h_out:
                return 0.0
            if s == HEARTS:  # the others follow with hearts
                e = self.heart_pts * min(3, h_out.bit_count())
                if (h_out >> AH) & 1 and r < 12:
                    e += self.ace_heart_pts - self.heart_pts
                return e
            return FUTURE_DUMP[NH] * self._pen(h_out, NH) / h_out.bit_count()
        if contract == NQ:
            q_out = out & QUEENS
            if not q_out:
                return 0.0
            e = 0.0
            if (q_out >> (13 * s + QUEEN)) & 1 and r > QUEEN:  # the queen may fall under it
                e += QUEEN_FALL * self.queen_pts
            if q_out & ~SUIT[s]:
                e += FUTURE_DUMP[NQ] * self.queen_pts
            return e
        if contract == BARBU:
            if not (out >> KH) & 1:
                return 0.0
            if s == HEARTS:
                return KING_FALL * self.king_pts if r == 12 else FUTURE_DUMP[BARBU] * 0.5 * self.king_pts / 4
            return FUTURE_DUMP[BARBU] * self.king_pts / 4
        return 0.0

    def _play_avoid(self, t: _Trick) -> int:
        cards = t.cards
        contract = t.contract
        base = self._base_cost(contract, t.tn)
        best, best_v = -1, 1e18
        if t.led < 0:  # leading
            for c in _cards(cards):
                s = c // 13
                p = self._p_win(t, c, [1, 2, 3])
                cost = base + self._pen(1 << c, contract) + self._dump_risk(t, [1, 2, 3], s)
                cost += self._follow_risk(t, c, [1, 2, 3])
                v = p * cost - self._danger(t, c) + LEAD_LENGTH * (t.hand & SUIT[s]).bit_count()
                if v < best_v - 1e-9 or (abs(v - best_v) <= 1e-9 and c % 13 < best % 13):
                    best, best_v = c, v
            return best
        now = base + self._pen(t.trick_mask, contract)
        follow = cards & SUIT[t.led]
        after = t.after
        if follow:
            risk = self._dump_risk(t, after, t.led)
            for c in _cards(follow):
                if c < t.win:
                    p = 0.0
                else:
                    p = self._p_win(t, c, after) if after else 1.0
                pen = self._pen(1 << c, contract)
                if p > 0.0 and after:
                    pen += self._follow_risk(t, c, after)
                v = p * (now + risk + pen) - (1.0 - p) * pen * GIVE - self._danger(t, c)
                if v < best_v - 1e-9:
                    best, best_v = c, v
            return best
        # void: discard the card whose risk is the greatest
        for c in _cards(cards):
            v = -self._danger(t, c) - self._pen(1 << c, contract) * GIVE
            if v < best_v - 1e-9:
                best, best_v = c, v
        return best

    def _play_shed(self, t: _Trick) -> int:
        """No Last Two before the last tricks: get rid of the cards most likely to win."""
        best, best_v = -1, -1e18
        for c in _cards(t.cards):
            v = self._danger(t, c) + 0.01 * (c % 13)
            if v > best_v:
                best, best_v = c, v
        return best

    # ------------------------------------------------------------------ Domino

    def _play_domino(self, rows: list[int], small: list, legal: int) -> int:
        hand = rows[_R_HAND]
        played = rows[_R_PLAYED] | rows[_R_PLAYED + 1] | rows[_R_PLAYED + 2] | rows[_R_PLAYED + 3]
        out = FULL & ~hand & ~played
        r0 = _onehot(small, _RANK, 13)
        best, best_v = -1, -1e18
        for c in _cards(legal & FULL):
            s, k = divmod(c, 13)
            mine = (hand >> (13 * s)) & S13
            others = (out >> (13 * s)) & S13
            if k == r0:
                beyond = mine & ~(1 << k)
                blocked = others
            elif k > r0:
                beyond = mine >> (k + 1) << (k + 1)
                blocked = others >> (k + 1) << (k + 1)
            else:
                beyond = mine & ((1 << k) - 1)
                blocked = others & ((1 << k) - 1)
            if beyond:
                far = max(_hi(beyond) - k, k - _lo(beyond))
                v = 100 + DOM_FAR * far + DOM_COUNT * beyond.bit_count()
            else:
                v = -blocked.bit_count()
            if v > best_v:
                best, best_v = c, v
        return best


class _Trick:
    """The facts of the current trick, from the observer's seat."""

    __slots__ = (
        "after",
        "cards",
        "cards_left",
        "contract",
        "hand",
        "led",
        "n_after",
        "n_played",
        "out",
        "tn",
        "trick_mask",
        "trump",
        "win",
    )


# ---------------------------------------------------------------------------- Trumps


def _play_trumps(t: _Trick) -> int:
    cards = t.cards
    trump = t.trump
    tmask = SUIT[trump]
    out = t.out
    out_t = out & tmask
    hand = t.hand

    def is_master(c: int) -> bool:
        s, r = divmod(c, 13)
        return ((out >> (13 * s)) & S13) >> (r + 1) == 0

    if t.led < 0:
        my_t = cards & tmask
        if my_t and out_t:
            top = _hi(my_t)
            if is_master(top):
                return top
        # cash a side master
        best, best_v = -1, -1e9
        for s in range(4):
            if s == trump:
                continue
            mine = cards & SUIT[s]
            if not mine:
                continue
            top = _hi(mine)
            if is_master(top):
                n_out = (out & SUIT[s]).bit_count()
                v = n_out - (3 if out_t and n_out < 3 else 0) if out_t else n_out + 1
                if v > best_v:
                    best, best_v = top, v
        if best >= 0 and best_v > 0:
            return best
        # lead low from the shortest side suit (to ruff later), else a low trump
        best, best_v = -1, 1e9
        for s in range(4):
            mine = cards & SUIT[s]
            if not mine:
                continue
            if s == trump:
                v = 50 + mine.bit_count()
            else:
                v = mine.bit_count() * 2 + (10 if (hand & tmask) == 0 else 0) - (out & SUIT[s]).bit_count() * 0.1
            if v < best_v:
                best, best_v = _lo(mine), v
        return best
    win = t.win
    winning_trump = win // 13 == trump
    beat = [c for c in _cards(cards) if (c // 13 == win // 13 and c > win) or (c // 13 == trump and not winning_trump)]
    if beat:
        if t.n_after == 0:
            return beat[0]  # cheapest winner
        masters = [c for c in beat if is_master(c)]
        if masters:
            return masters[0]
        if beat[0] // 13 == trump:
            return beat[0]
        return beat[-1]  # the strongest card that beats the trick, most likely to hold
    return _lowest_discard(t)


def _lowest_discard(t: _Trick) -> int:
    """The least useful card: lowest, from the shortest non-trump suit, sparing masters."""
    best, best_v = -1, 1e9
    out = t.out
    for c in _cards(t.cards):
        s, r = divmod(c, 13)
        v = r * 3 + (t.hand & SUIT[s]).bit_count() + (40 if s == t.trump else 0)
        if not ((out >> (13 * s)) & S13) >> (r + 1):
            v += 20  # a master: keep it
        if v < best_v:
            best, best_v = c, v
    return best


# ---------------------------------------------------------------------------- hand models


def _domino_gap_cost(hand: int, r: int) -> int:
    """Cards of other players that must be played before each of ours becomes playable,
    summed over our cards, with starting rank ``r``."""
    cost = 0
    for s in range(4):
        mine = (hand >> (13 * s)) & S13
        if not mine:
            continue
        gaps = 0
        for k in range(r, 13):
            if (mine >> k) & 1:
                cost += gaps
            else:
                gaps += 1
        gaps = 0
        for k in range(r - 1, -1, -1):
            if (mine >> k) & 1:
                cost += gaps
            else:
                gaps += 1
    return cost


def _features(hand: int, contract: int, declarer: bool, trump: int, rank: int) -> list[float]:
    """Hand features for the expected-score model (the same list for every contract;
    each contract has its own weights)."""
    n = [0] * 13  # cards of each rank
    voids = singles = doubles = longs = unguarded = 0
    rank_sum = 0
    suits = [(hand >> (13 * s)) & S13 for s in range(4)]
    for x in suits:
        k = x.bit_count()
        voids += k == 0
        singles += k == 1
        doubles += k == 2
        longs += max(0, k - 4)
        high = (x >> 9).bit_count()
        low = (x & 0x1F).bit_count()
        unguarded += max(0, high - low)
        for r in range(13):
            if (x >> r) & 1:
                n[r] += 1
                rank_sum += r
    h = suits[HEARTS]
    has_kh = (h >> 11) & 1
    q_guard = q_bare = kings_exposed = 0
    for x in suits:
        if (x >> QUEEN) & 1:
            lower = (x & 0x3FF).bit_count()
            q_guard += min(lower, 4)
            q_bare += lower <= 1
        elif x >> 11:
            kings_exposed += (x >> 11).bit_count() * (1 if (x & 0x3FF).bit_count() <= 2 else 0.5)
    # fmt: off
    f = [
        1.0, float(declarer),
        n[12], n[11], n[10], n[9], n[8],  # aces, kings, queens, jacks, tens
        n[0] + n[1] + n[2] + n[3],  # cards 2-5
        voids, singles, doubles, longs, unguarded,  # longs: cards past the 4th; unguarded: high minus low
        rank_sum / 13.0,
        # hearts: length, A♥, K♥, K♥'s guards, K♥ with at most one guard, J♥+ count, 2♥-6♥ count
        h.bit_count(), (h >> 12) & 1, has_kh, has_kh * (h & 0x7FF).bit_count(),
        has_kh * ((h & 0x7FF).bit_count() <= 1), (h >> 9).bit_count(), (h & 0x1F).bit_count(),
        q_guard, q_bare, kings_exposed,  # queens' guards, bare queens, kings/aces without the queen
    ]
    if contract == TRUMPS and trump >= 0:
        t = suits[trump]
        side_aces = sum((suits[s] >> 12) & 1 for s in range(4) if s != trump)
        side_kings = sum((suits[s] >> 11) & 1 for s in range(4) if s != trump)
        side_short = sum(suits[s].bit_count() <= 1 for s in range(4) if s != trump)
        # trump length, A K Q, J+ count, side aces and kings, short side suits, extra length squared
        f += [t.bit_count(), (t >> 12) & 1, (t >> 11) & 1, (t >> 10) & 1, (t >> 9).bit_count(),
              side_aces, side_kings, side_short, max(0, t.bit_count() - 4) ** 2]
    else:
        f += [0] * 9
    if contract == DOMINO and rank >= 0:
        at = sum((x >> rank) & 1 for x in suits)  # starting-rank cards held
        spread = sum(abs(r - rank) * n[r] for r in range(13))
        f += [_domino_gap_cost(hand, rank), at, spread / 13.0, float(declarer) * at, float(declarer and at == 0)]
    else:
        f += [0] * 5
    # fmt: on
    return f


NUM_FEATURES = len(_features(0, DOMINO, True, 0, 0))


_TOTAL = (
    lambda a: -13 * a.trick_pts,
    lambda a: -(12 * a.heart_pts + a.ace_heart_pts),
    lambda a: -4 * a.queen_pts,
    lambda a: -a.king_pts,
    lambda a: -(a.last_two_pts[0] + a.last_two_pts[1]),
    lambda a: 13 * a.rules.trumps_points,
    lambda a: sum(a.rules.domino_scores),
)
