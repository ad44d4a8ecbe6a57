"""``heuristic``: a rule-based Barbu player that sees only its observation.

Every decision reads the observation (own hand and public facts, seats relative to the
observer: 0 self, 1 left, 2 opposite, 3 right) and the action mask, nothing else. The
card rows are turned into 52-bit ints once per call (one ``np.packbits``) and the rules
work on those ints; a forced decision is answered from the mask alone.

=================  =====================================================================
decision           rule
=================  =====================================================================
declare            the unused contract for which this hand is best compared with an
                   average hand: a linear model of hand features per contract gives
                   the expected raw score (fitted offline on heuristic-vs-random play,
                   the heuristic declaring random contracts), less the contract's
                   average and less the option of keeping it for a better later hand
trump suit         the longest suit, honours breaking ties (1.5 per card, A 4 K 3 Q 2 J 1)
Domino rank        the rank leaving the fewest cards of other players between it and the
                   observer's cards, starting-rank cards counting in favour
doubling           name a player when the model's expected raw score for the observer
                   beats that player's (the declarer: a model of own minus declarer's
                   score; anyone else: the average of the other three); a declarer
                   redoubles the same way. The mask's obligation is always met: the
                   declarer is added whenever every legal choice names them
negative trick     each legal card is scored as: chance it wins the trick x what the
contracts          trick would cost (trick points, penalty cards in it, cards the later
                   players may follow with or drop when void), less the future risk it
                   removes from the hand (chance it wins a later trick, own penalty
                   card included), less a little for handing a penalty card to someone
                   else. So it ducks under the winner with its highest card, dumps
                   queens / K♥ / A♥ and high hearts / unguarded high cards when void,
                   leads low cards others must beat, from short suits. No Last Two:
                   sheds its most dangerous cards until the last tricks, then avoids
Trumps             draws trumps with the master trump, cashes side masters while the
                   suit is still held by others, else leads low from its shortest side
                   suit; wins with the lowest card when last, else with a master or its
                   strongest card; ruffs and overruffs as low as will win; discards the
                   lowest card of its shortest side suit
Domino             plays the card that opens the way to its own cards (furthest run
                   first); with none, the card that frees fewest cards of the others
=================  =====================================================================

Cards played so far (public) tell which higher and lower cards are still out; the
numbers of cards each player holds size the chances. Deterministic: no randomness is
used (the seed is only kept), and nothing is kept between decisions. ``rules`` gives the
point values (default: standard).

``act`` is the readable reference. ``act_batch(observations, masks)`` picks exactly the
same actions for a whole batch in one call into numba kernels
(``_heuristic_kernels``, a rule-for-rule transcription, loaded on first use);
``tests/test_heuristic_batch.py`` compares the two on every decision of many games.
"""

from __future__ import annotations

import sys

import numpy as np

from ..cards import cards_of
from ..observation import OFFSETS
from ..rules import Rules, load_rules
from .registry import register

# ---------------------------------------------------------------------------- constants

FULL = (1 << 52) - 1
S13 = 0x1FFF
SUIT = tuple(S13 << (13 * s) for s in range(4))
HEARTS = 2
HEARTS_MASK = SUIT[HEARTS]
KH, AH = 37, 38
QUEEN = 10
QUEENS = sum(1 << (13 * s + QUEEN) for s in range(4))
NT, NH, NQ, BARBU, NL2, TRUMPS, DOMINO = range(7)

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

# ---------------------------------------------------------------------------- tunables
# (module constants so that they can be tuned; the agent never changes them)

#: chance that a player void in the led suit drops a penalty card on the trick
DUMP_WILL = 0.7
#: weight of the future risk a card carries (relative to an immediate cost)
FUTURE_WEIGHT = 1.0
#: value (per penalty point) of handing a penalty card to another player
GIVE = 0.3
#: chance that a queen of the suit (No Queens) / K♥ (Barbu) falls under a higher card
QUEEN_FALL = 0.4
KING_FALL = 0.4
#: chance that a follower holding the suit's penalty card (queen, K♥, A♥) plays it
FOLLOW_FALL = 0.5
#: share of a penalty card another player may drop on a later trick of ours
FUTURE_DUMP = (0.0, 2.0, 0.3, 1.0)
#: protection each lower card of the same suit gives a high card
PROTECT = (0.85, 0.85, 0.7, 0.8, 0.85)
#: leading: preference for short suits (per card held in the suit)
LEAD_LENGTH = 0.3
#: No Last Two: tricks before this one are played to shed high cards
NL2_SHED_UNTIL = 10
#: Domino: bonus per starting-rank card held when choosing the rank
DOMINO_RANK_BONUS = 1.0
#: Domino play: weights of the distance to the furthest own card a play leads to and of
#: the number of own cards it leads to
DOM_FAR = 4.0
DOM_COUNT = 2.0
#: Declaring: weight of the option of keeping a contract for a better later hand
OPTION_VALUE = 0.5
#: doubling margins: name a player when the expected difference exceeds this
DOUBLE_MARGIN = 0.0
REDOUBLE_MARGIN = 0.0


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
    return sum(a * b for a, b in zip(w, f))


_cards = cards_of  # the card ids of a set, ascending


# ---------------------------------------------------------------------------- the agent


class HeuristicAgent:
    """A rule-based player for every decision of Barbu (see the module docstring)."""

    name = "heuristic"

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
        self._kernel_args: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # built by the first act_batch

    # ------------------------------------------------------------------ entry points

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` for every row of ``observations`` float [N, OBS_DIM] with legal actions
        ``masks`` [N, 85] (bool or ints, nonzero: legal), as int64 [N]: the same actions,
        computed by the numba kernels of ``_heuristic_kernels``."""
        from . import _heuristic_kernels as HK

        obs = np.asarray(observations)
        if obs.dtype != np.float64:
            obs = obs.astype(np.float32, copy=False)  # act reads float32 (and float64) values as they are
        obs = np.ascontiguousarray(obs)
        m = np.asarray(masks)
        # act reads the mask as uint8 (np.asarray(mask, dtype=np.uint8)), nonzero: legal.
        m = np.ascontiguousarray(m.view(np.uint8) if m.dtype in (np.bool_, np.int8) else m.astype(np.uint8))
        if obs.ndim != 2 or obs.shape[1] != HK.OBS_DIM or m.shape != (obs.shape[0], HK.NUM_ACTIONS):
            raise ValueError(
                f"act_batch takes observations [N, {HK.OBS_DIM}] and masks [N, {HK.NUM_ACTIONS}], "
                f"not {obs.shape} and {m.shape}"
            )
        actions = np.empty(obs.shape[0], dtype=np.int64)
        if self._kernel_args is None:
            self._kernel_args = _kernel_params(self)
        ip, fp, weights = self._kernel_args
        HK.heuristic_actions(obs, m, ip, fp, weights, np.empty(NUM_FEATURES), actions)
        return actions

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
        keep = OPTION_VALUE * _EXPECTED_MAX[later]
        for c in range(7):
            if (legal >> (52 + c)) & 1:
                # A contract kept for later can go to the best of the later hands.
                v = self.contract_value(hand, c) - keep * _SPREAD[c]
                if v > best_v:
                    best, best_v = c, v
        return 52 + best

    def contract_value(self, hand: int, c: int) -> float:
        """Expected raw score of this hand in contract ``c`` as declarer, less the
        contract's average (how much better than usual this hand is for ``c``)."""
        return self.expected_raw(hand, c, True) - _AVERAGE[c]

    def expected_raw(self, hand: int, c: int, declarer: bool, trump: int = -1, rank: int = -1) -> float:
        """Expected raw score for the observer in contract ``c`` (a linear model of hand
        features)."""
        return _dot(_WEIGHTS[c], self._hand_features(hand, c, declarer, trump, rank))

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
            v = _domino_gap_cost(hand, r) - DOMINO_RANK_BONUS * ((hand >> r) & 0x0008004002001).bit_count()
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
        me = _dot(_WEIGHTS[contract], f)
        other = (_TOTAL[contract](self) - me) / 3.0  # average of the other three
        vs_declarer = _dot(_WEIGHTS_VS_DECLARER[contract], f) if decl != 0 else 0.0
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


# fmt: off
#: Linear weights of the expected-raw-score model per contract (ridge regression on
#: heuristic-vs-random play, the heuristic declaring random contracts; features as
#: ``_features``).
_WEIGHTS = (
    (  # no_tricks
        2.516, 0.011, -0.129, 0.085, -0.296, 0.116, -0.137, -0.038, 1.704, 1.060, 0.364, 0.115, -0.675, -0.679, 0.006,
        0.008, 0.054, -0.009, -0.277, -0.022, -0.028, 0.051, -0.278, -0.508, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_hearts
        2.199, -0.144, 0.209, 0.131, 0.598, 0.329, 0.043, -0.043, -0.371, -0.195, -0.172, 0.269, -0.499, -1.150,
        0.510, 0.104, -0.175, 0.116, -0.541, -0.317, 0.280, -0.005, 0.083, 0.425, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_queens
        1.014, -0.196, 0.161, 0.264, -1.052, 0.157, 0.062, -0.017, 0.730, 0.502, 0.225, -0.089, -0.314, -0.220,
        -0.079, 0.005, 0.278, -0.027, -0.798, 0.064, 0.007, 0.285, -0.986, -0.661, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_king_of_hearts
        1.363, 0.039, 0.136, 0.101, 0.120, 0.167, 0.086, -0.018, 0.050, -0.288, -0.086, 0.243, -0.165, -0.715, 0.463,
        -0.023, 1.134, -0.182, -2.644, -0.193, -0.092, 0.048, 0.180, 0.151, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_last_two
        3.206, -0.005, 0.387, 0.223, 0.489, 0.148, 0.032, -0.037, 0.311, 0.188, 0.113, -0.212, -0.080, -0.850, -0.016,
        -0.164, 0.556, -0.199, -0.621, 0.121, 0.125, -0.087, 0.004, 0.120, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # trumps
        -16.689, -0.409, 2.630, 1.831, 1.878, 0.836, 0.472, 0.102, 6.707, 4.873, 0.769, -0.627, -0.193, 1.963, 0.028,
        0.118, 0.920, -0.346, -0.680, 0.133, 0.006, -0.077, -0.297, -0.046, 4.638, 1.582, 1.033, 0.075, 0.189, 1.048,
        0.798, -3.219, 0.130, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # domino
        12.527, -2.730, -9.303, -7.336, -6.417, -3.715, -1.915, 0.039, -1.376, 1.006, 0.497, 0.216, 1.008, 9.077,
        -0.592, -0.451, -1.295, 0.622, -0.090, 0.894, 0.962, 0.134, 1.040, -0.658, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, -0.318, 0.896, -0.581, 0.384, 3.343
    ),
)
#: The same for (own raw score - declarer's raw score) when not declaring.
_WEIGHTS_VS_DECLARER = (
    (  # no_tricks
        11.535, 0.000, -0.164, -0.011, -0.532, 0.110, -0.170, -0.012, 2.218, 1.273, 0.431, 0.244, -0.861, -0.827,
        0.058, -0.280, 0.369, -0.146, -0.264, 0.047, -0.003, 0.070, -0.390, -0.651, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_hearts
        15.528, 0.000, 0.153, 0.153, 1.188, 0.536, 0.194, -0.147, -1.174, -0.554, -0.556, 0.429, -0.541, -2.008,
        0.724, -0.144, -0.171, 0.040, -1.073, -0.175, 0.278, -0.028, 0.058, 0.757, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_queens
        7.857, 0.000, 0.207, 0.065, -1.405, 0.071, -0.103, 0.048, 0.456, 0.140, 0.024, -0.050, -0.399, 0.086, -0.079,
        -0.142, 0.414, 0.005, -1.137, 0.100, -0.092, 0.406, -1.213, -0.930, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_king_of_hearts
        10.554, 0.000, 0.577, 0.476, 0.773, 0.420, 0.308, -0.047, 0.679, -0.388, 0.018, 0.059, -0.136, -1.559, 0.963,
        -0.003, 1.765, -0.156, -3.830, -0.757, -0.303, -0.106, -0.063, 0.044, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_last_two
        16.544, 0.000, 0.240, -0.452, 2.413, 0.355, -0.311, -0.118, 2.947, 1.287, 0.667, -0.618, -0.071, -1.552,
        -0.104, -0.017, 1.028, -0.064, -1.231, -0.064, -0.021, -0.553, -0.882, 1.155, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # trumps
        -45.313, 0.000, 3.142, 2.173, 1.694, 0.827, 0.438, 0.337, 9.156, 6.433, 1.151, -1.309, -0.174, 3.067, 0.026,
        -0.051, 0.737, -0.242, -0.367, 0.172, 0.095, -0.001, 0.096, -0.039, 6.005, 1.582, 1.107, 0.005, 0.468, 1.560,
        1.066, -4.001, 0.348, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # domino
        -8.087, 0.000, -12.826, -10.560, -9.101, -4.907, -2.046, -0.117, -2.796, 0.371, 0.625, 0.173, 0.805, 12.685,
        -0.688, -0.343, -0.113, 0.153, -2.512, 1.499, 1.239, 0.350, 1.318, -0.343, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, -0.427, 1.585, -0.577, 0.000, 0.000
    ),
)
# fmt: on
#: Average raw score of the heuristic as declarer per contract (for the declare choice).
_AVERAGE = (-2.83, -2.19, -1.69, -0.99, -0.82, 27.52, 30.76)
#: Spread (standard deviation over random hands) of ``contract_value`` per contract.
_SPREAD = (1.92, 1.59, 1.26, 1.01, 0.56, 7.48, 7.77)
#: Expected maximum of n standard normal draws, n = 0 ... 6.
_EXPECTED_MAX = (0.0, 0.0, 0.564, 0.846, 1.029, 1.163, 1.267)
_TOTAL = (
    lambda a: -13 * a.trick_pts,
    lambda a: -(12 * a.heart_pts + a.ace_heart_pts),
    lambda a: -4 * a.queen_pts,
    lambda a: -a.king_pts,
    lambda a: -(a.last_two_pts[0] + a.last_two_pts[1]),
    lambda a: 13 * a.rules.trumps_points,
    lambda a: sum(a.rules.domino_scores),
)


def _kernel_params(agent: HeuristicAgent) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``_heuristic_kernels`` needs of the agent and of this module: the point values
    (int64, indices ``P_*``), the tunables and declaring constants (float64, ``T_*``) and
    the two models' weights (float64 [2, 7, NUM_FEATURES])."""
    from . import _heuristic_kernels as HK

    if HK.NUM_FEATURES != NUM_FEATURES:
        raise RuntimeError(f"_heuristic_kernels computes {HK.NUM_FEATURES} features, _features {NUM_FEATURES}")
    ip = np.zeros(HK.NUM_INT_PARAMS, dtype=np.int64)
    ip[HK.P_TRICK] = agent.trick_pts
    ip[HK.P_HEART] = agent.heart_pts
    ip[HK.P_ACE_HEART] = agent.ace_heart_pts
    ip[HK.P_QUEEN] = agent.queen_pts
    ip[HK.P_KING] = agent.king_pts
    ip[HK.P_LAST_TWO : HK.P_LAST_TWO + 2] = agent.last_two_pts
    ip[HK.P_TOTAL : HK.P_TOTAL + 7] = [total(agent) for total in _TOTAL]
    ip[HK.P_SHED_UNTIL] = NL2_SHED_UNTIL
    # Python 3.12's sum() adds floats with Neumaier's compensation; _dot sums with it.
    ip[HK.P_COMPENSATED_SUM] = sys.version_info >= (3, 12)
    fp = np.zeros(HK.NUM_FLOAT_PARAMS, dtype=np.float64)
    fp[HK.T_DUMP_WILL] = DUMP_WILL
    fp[HK.T_FUTURE_WEIGHT] = FUTURE_WEIGHT
    fp[HK.T_GIVE] = GIVE
    fp[HK.T_QUEEN_FALL] = QUEEN_FALL
    fp[HK.T_KING_FALL] = KING_FALL
    fp[HK.T_FOLLOW_FALL] = FOLLOW_FALL
    fp[HK.T_FUTURE_DUMP : HK.T_FUTURE_DUMP + 4] = FUTURE_DUMP
    fp[HK.T_PROTECT : HK.T_PROTECT + 5] = PROTECT
    fp[HK.T_LEAD_LENGTH] = LEAD_LENGTH
    fp[HK.T_RANK_BONUS] = DOMINO_RANK_BONUS
    fp[HK.T_DOM_FAR] = DOM_FAR
    fp[HK.T_DOM_COUNT] = DOM_COUNT
    fp[HK.T_OPTION_VALUE] = OPTION_VALUE
    fp[HK.T_DOUBLE_MARGIN] = DOUBLE_MARGIN
    fp[HK.T_REDOUBLE_MARGIN] = REDOUBLE_MARGIN
    fp[HK.T_AVERAGE : HK.T_AVERAGE + 7] = _AVERAGE
    fp[HK.T_SPREAD : HK.T_SPREAD + 7] = _SPREAD
    fp[HK.T_EXPECTED_MAX : HK.T_EXPECTED_MAX + 7] = _EXPECTED_MAX
    return ip, fp, np.array((_WEIGHTS, _WEIGHTS_VS_DECLARER), dtype=np.float64)


@register("heuristic")
def make_heuristic(seed: int = 0, rules: Rules | str | dict | None = None, **_: object) -> HeuristicAgent:
    return HeuristicAgent(seed=seed, rules=rules)
