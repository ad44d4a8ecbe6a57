"""The oracle's Barbu game engine (see ``tests/oracle/__init__.py``): the rules of docs/rules.md in plain Python.

``BarbuState`` is the whole game (28 hands). It is mutable and advanced only through
``apply_action``; ``legal_mask`` / ``legal_actions`` give the actions of the seat to act
(``current_player``). Seats are ints 0-3 (left of seat s is s+1 mod 4), cards are ints
0-51 and a set of cards is a 52-bit int (``cards.py``). Legality is bit operations on
those ints. Randomness (deals, the first declarer) comes from one explicit
``numpy.random.Generator``. The engine never calls an agent and never prints.

Actions (docs/rules.md#cards-actions-and-observations) are one space of 85 ids for every decision:

==========  ==========================================================================
ids         meaning
==========  ==========================================================================
0-51        play card id (trick play and Domino): ``action == card``
52-58       declare a contract: ``52 + Contract`` (52 No Tricks ... 58 Domino)
59-62       name the trump suit: ``59 + suit`` (clubs, diamonds, hearts, spades)
63-75       name the Domino starting rank: ``63 + rank`` (63 = "2", 75 = ace)
76-83       doubling turn: ``76 + b``, b a 3-bit set of seats named relative to the
            actor: bit 0 left (+1), bit 1 opposite (+2), bit 2 right (+3); 76 = nobody
84          pass (Domino, only when no card can be played)
==========  ==========================================================================

A legal-action set is an 85-bit int with bit ``a`` set for each legal action; in trick
play it is literally the set of playable cards.

A hand runs through the phases DECLARE -> (TRUMP | DOMINO_RANK) -> DOUBLE -> (TRICKS |
DOMINO); after hand 28 the phase is GAME_OVER. Every decision is a turn, even a forced
one.

>>> import numpy as np
>>> s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=2)
>>> s.phase.name, s.current_player, s.legal_actions()
('DECLARE', 2, [52, 53, 54, 55, 56, 57, 58])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The action ids and the fixed sizes and names live below the engine; they are re-exported here.
from barbu_env.game.actions import (
    DECLARE_OFFSET,
    DOUBLE_OFFSET,
    NUM_ACTIONS,
    PASS_ACTION,
    PLAY_OFFSET,  # noqa: F401 (re-exported)
    RANK_OFFSET,
    TRUMP_OFFSET,
    action_text,
    actions_of,
)
from barbu_env.game.cards import (
    ACE_OF_HEARTS,
    FULL_DECK,
    HEARTS,
    HEARTS_MASK,
    KING_OF_HEARTS,
    NUM_RANKS,
    QUEENS_MASK,
    SUIT_MASK,
    card_text,
    hand_text,
    to_card,
)
from barbu_env.game.constants import (
    CARDS_PER_HAND,
    CONTRACT_NAMES,
    HANDS_PER_DECLARER,
    NUM_CONTRACTS,
    NUM_HANDS,
    NUM_PLAYERS,
    POSITIVE_CONTRACTS,  # noqa: F401 (re-exported)
    Contract,
    Phase,
)
from barbu_env.game.rules import Rules, load_rules

_ALL_CONTRACTS = (1 << NUM_CONTRACTS) - 1
_TRUMP_BITS = 0xF << TRUMP_OFFSET
_RANK_BITS = 0x1FFF << RANK_OFFSET
_PASS_BIT = 1 << PASS_ACTION
_NO_DOUBLE_BIT = 1 << DOUBLE_OFFSET


def _double_bits(allowed: int, required: int) -> int:
    """Legal doubling actions naming a subset of ``allowed`` that contains ``required``
    (both 3-bit relative seat sets)."""
    bits = 0
    for b in range(8):
        if b & ~allowed == 0 and b & required == required:
            bits |= 1 << (DOUBLE_OFFSET + b)
    return bits


#: _DOUBLE_BITS[allowed][required] for every pair of 3-bit relative seat sets.
_DOUBLE_BITS = tuple(tuple(_double_bits(a, r) for r in range(8)) for a in range(8))

# Phases bound once for the hot paths.
_DECLARE, _TRUMP, _DOMINO_RANK, _DOUBLE, _TRICKS, _DOMINO, _GAME_OVER = tuple(Phase)
_NO_HEARTS, _NO_QUEENS, _BARBU, _NO_LAST_TWO, _TRUMPS = (
    Contract.NO_HEARTS,
    Contract.NO_QUEENS,
    Contract.NO_KING_OF_HEARTS,
    Contract.NO_LAST_TWO,
    Contract.TRUMPS,
)


class IllegalActionError(ValueError):
    """An action that is not legal in the current state. The state is left unchanged."""


class DealError(ValueError):
    """Deals given to ``reset``/``new_game`` that are not four hands of 13 distinct cards."""


def declarer_of_hand(rules: Rules, first_declarer: int, hand: int) -> int:
    """Declarer of hand ``hand`` (0-based) under the rotation rule (docs/rules.md#declarers-and-the-28-hands)."""
    if rules.rotation == "every_hand":
        return (first_declarer + hand) % NUM_PLAYERS
    return (first_declarer + hand // HANDS_PER_DECLARER) % NUM_PLAYERS


def contract_total(rules: Rules, contract: int) -> int:
    """Sum of a hand's raw scores in ``contract`` under ``rules``."""
    return (
        13 * rules.no_tricks_points,
        12 * rules.no_hearts_points + rules.no_hearts_ace_points,
        4 * rules.no_queens_points,
        rules.barbu_points,
        sum(rules.no_last_two_points),
        13 * rules.trumps_points,
        sum(rules.domino_scores),
    )[contract]


def settle(raw: Sequence[int], levels: Sequence[Sequence[int]]) -> list[int]:
    """Settled scores (docs/rules.md#settlement): for each pair at level k, i gets k*(raw_i - raw_j)."""
    settled = list(raw)
    for i in range(NUM_PLAYERS):
        for j in range(i + 1, NUM_PLAYERS):
            k = levels[i][j]
            if k:
                d = k * (raw[i] - raw[j])
                settled[i] += d
                settled[j] -= d
    return settled


def parse_deal(deal: Sequence[Sequence[int | str]]) -> tuple[int, int, int, int]:
    """Four hands (ids or text) as four 52-bit ints; anything but 4 x 13 distinct cards
    raises ``DealError``."""
    if isinstance(deal, (str, bytes)) or not hasattr(deal, "__len__") or len(deal) != NUM_PLAYERS:
        raise DealError(f"a deal is four hands (seats 0-3), got {deal!r}")
    hands = []
    for seat, hand in enumerate(deal):
        if isinstance(hand, (str, bytes)):
            hand = hand.replace(",", " ").split()
        if not hasattr(hand, "__len__"):
            raise DealError(f"seat {seat} is dealt {hand!r}, not a list of 13 cards")
        if len(hand) != CARDS_PER_HAND:
            raise DealError(f"seat {seat} is dealt {len(hand)} cards, not 13: {hand!r}")
        mask = 0
        for c in hand:
            try:
                mask |= 1 << to_card(c)
            except ValueError as e:
                raise DealError(f"seat {seat}: {e}") from None
        if mask.bit_count() != CARDS_PER_HAND:
            raise DealError(f"seat {seat} is dealt a card twice: {hand!r}")
        hands.append(mask)
    union = hands[0] | hands[1] | hands[2] | hands[3]
    if union != FULL_DECK:
        raise DealError(f"the four hands hold {union.bit_count()} distinct cards, not all 52: a card is dealt twice")
    return tuple(hands)


@dataclass(frozen=True)
class HandResult:
    """What one hand came to. Seats are absolute."""

    hand: int  # 0-based hand number
    declarer: int
    contract: str  # one of CONTRACT_NAMES
    trump: int | None  # trump suit (Trumps) or None
    starting_rank: int | None  # Domino starting rank or None
    dealt: tuple[int, int, int, int]  # the four hands as dealt (card sets)
    levels: tuple[tuple[int, ...], ...]  # 4x4 doubling levels (0, 1 or 2), symmetric
    raw: tuple[int, int, int, int]
    settled: tuple[int, int, int, int]
    tricks: tuple[int, int, int, int]  # tricks won (0s in Domino)
    out_order: tuple[int, ...]  # Domino finishing order (empty otherwise)

    def to_dict(self) -> dict:
        """Plain JSON values; the dealt hands as card text ("2C TD AH ...")."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["dealt"] = [hand_text(h) for h in self.dealt]
        d["levels"] = [list(row) for row in self.levels]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


class BarbuState:
    """The complete game state. Create with ``BarbuState.new_game``."""

    __slots__ = (
        "rules",  # Rules in force
        "rng",  # numpy Generator for the deals past ``deals``
        "deals",  # preset deals: list of 4-tuples of card sets, for hands 0, 1, ...
        "first_declarer",  # seat declaring hand 0
        "hand_number",  # 0..27, 28 once the game is over
        "phase",  # Phase
        "current_player",  # seat to act; -1 when the game is over
        "declarer",  # seat declaring this hand
        "contracts_left",  # per seat: 7-bit set of contracts not yet declared (Contract bits)
        "owed",  # owed[i][d]: doubles seat i still owes declarer d in d's 7 hands
        "scores",  # game totals per seat (sum of settled hand scores)
        "dealt",  # the four hands as dealt this hand (card sets)
        "hands",  # the four hands now (card sets)
        "contract",  # Contract of this hand, or -1 before the declaration
        "trump",  # trump suit (Trumps) or -1
        "start_rank",  # Domino starting rank or -1
        "named",  # named[i]: set (4-bit, absolute seats) of players seat i named while doubling
        "double_order",  # seats taking doubling turns, in order (grows with redouble_pass)
        "double_pos",  # index into double_order of the seat to act
        "played",  # played[i]: cards seat i has played this hand
        "taken",  # taken[i]: cards in the tricks seat i has won this hand
        "tricks_won",  # tricks won per seat this hand
        "points",  # raw points per seat so far this hand
        "trick_number",  # 0-based number of the current trick
        "leader",  # seat that led the current trick
        "trick",  # trick[i]: card seat i played to the current trick, -1 if none
        "trick_mask",  # cards in the current trick
        "trick_size",  # cards in the current trick (0..3 between actions)
        "led_suit",  # suit led to the current trick, -1 before the lead
        "win_seat",  # seat winning the current trick so far
        "win_card",  # card winning the current trick so far
        "playable",  # Domino: cards that could be placed on the layout now
        "out_order",  # Domino: seats in the order they went out
        "voids",  # voids[i]: 4-bit set of suits seat i has shown void in this hand (did not follow)
        "excluded",  # excluded[i]: cards the rules have shown seat i does not hold (this hand)
        "results",  # HandResult of every finished hand
        "history",  # every action applied, in order
        "_legal",  # cached legal-action set, None when stale
    )

    # ------------------------------------------------------------------ creation

    @classmethod
    def new_game(
        cls,
        rules: Rules | str | dict | None = None,
        rng: np.random.Generator | None = None,
        first_declarer: int | None = None,
        deals: Sequence | None = None,
    ) -> BarbuState:
        """A new game: the first declarer is ``first_declarer`` or drawn from ``rng``;
        hand h is ``deals[h]`` where given, else dealt from ``rng``."""
        s = cls.__new__(cls)
        s.rules = load_rules(rules)
        s.rng = rng if rng is not None else np.random.default_rng()
        if deals is None:
            deals = []
        if isinstance(deals, (str, bytes)) or not hasattr(deals, "__len__") or len(deals) > NUM_HANDS:
            raise DealError(f"deals must be a list of at most {NUM_HANDS} deals")
        s.deals = [parse_deal(d) for d in deals]
        if first_declarer is None:
            first_declarer = int(s.rng.integers(NUM_PLAYERS))
        if isinstance(first_declarer, bool) or first_declarer not in range(NUM_PLAYERS):
            raise ValueError(f"first_declarer must be a seat 0-3, not {first_declarer!r}")
        s.first_declarer = int(first_declarer)
        s.hand_number = 0
        s.contracts_left = [_ALL_CONTRACTS] * NUM_PLAYERS
        m = s.rules.min_declarer_doubles
        s.owed = [[0 if i == d else m for d in range(NUM_PLAYERS)] for i in range(NUM_PLAYERS)]
        s.scores = [0] * NUM_PLAYERS
        s.results = []
        s.history = []
        s._start_hand()
        return s

    def clone(self) -> BarbuState:
        """An independent copy (the rng is shared: a clone is for look-ahead, not for
        dealing)."""
        c = BarbuState.__new__(BarbuState)
        for name in BarbuState.__slots__:
            v = getattr(self, name)
            if name == "owed":
                v = [row[:] for row in v]
            elif type(v) is list:
                v = v[:]
            setattr(c, name, v)
        return c

    def _deal(self) -> tuple[int, int, int, int]:
        if self.hand_number < len(self.deals):
            return self.deals[self.hand_number]
        perm = self.rng.permutation(52).reshape(NUM_PLAYERS, CARDS_PER_HAND).astype(np.uint64)
        masks = np.bitwise_or.reduce(np.left_shift(np.uint64(1), perm), axis=1)
        return tuple(int(x) for x in masks)

    def _start_hand(self) -> None:
        self.dealt = self._deal()
        self.hands = list(self.dealt)
        self.declarer = declarer_of_hand(self.rules, self.first_declarer, self.hand_number)
        self.phase = _DECLARE
        self.current_player = self.declarer
        self.contract = -1
        self.trump = -1
        self.start_rank = -1
        self.named = [0] * NUM_PLAYERS
        self.double_order = []
        self.double_pos = 0
        self.played = [0] * NUM_PLAYERS
        self.taken = [0] * NUM_PLAYERS
        self.tricks_won = [0] * NUM_PLAYERS
        self.points = [0] * NUM_PLAYERS
        self.trick_number = 0
        self.leader = self.declarer
        self.trick = [-1] * NUM_PLAYERS
        self.trick_mask = 0
        self.trick_size = 0
        self.led_suit = -1
        self.win_seat = -1
        self.win_card = -1
        self.playable = 0
        self.out_order = []
        self.voids = [0] * NUM_PLAYERS
        self.excluded = [0] * NUM_PLAYERS
        self._legal = None

    # ------------------------------------------------------------------ queries

    @property
    def is_terminal(self) -> bool:
        return self.phase is _GAME_OVER

    def levels(self) -> list[list[int]]:
        """levels[i][j]: 0, 1 (double) or 2 (redoubled) between seats i and j this hand."""
        n = self.named
        return [[((n[i] >> j) & 1) + ((n[j] >> i) & 1) for j in range(NUM_PLAYERS)] for i in range(NUM_PLAYERS)]

    def hands_left(self, declarer: int) -> int:
        """Hands ``declarer`` has left to declare, the current one included once declared."""
        left = self.contracts_left[declarer].bit_count()
        if declarer == self.declarer and self.contract >= 0 and self.phase is not _GAME_OVER:
            left += 1
        return left

    def legal_mask(self) -> int:
        """The legal actions of ``current_player`` as an 85-bit int (0 once the game is over)."""
        legal = self._legal
        if legal is None:
            phase = self.phase
            if phase is _TRICKS:
                legal = self._legal_trick_cards()
            elif phase is _DOMINO:
                legal = self.hands[self.current_player] & self.playable or _PASS_BIT
            elif phase is _DOUBLE:
                legal = self._legal_doubles()
            elif phase is _DECLARE:
                legal = self.contracts_left[self.declarer] << DECLARE_OFFSET
            elif phase is _TRUMP:
                legal = _TRUMP_BITS
            elif phase is _DOMINO_RANK:
                legal = _RANK_BITS
            else:
                legal = 0
            self._legal = legal
        return legal

    def legal_actions(self) -> list[int]:
        """The legal actions of ``current_player``, ascending."""
        return actions_of(self.legal_mask())

    def _legal_trick_cards(self) -> int:
        hand = self.hands[self.current_player]
        contract = self.contract
        if self.trick_size == 0:
            # Leading: No Hearts and Barbu ban a heart lead unless the hand is all hearts.
            if contract == _NO_HEARTS or contract == _BARBU:
                return hand & ~HEARTS_MASK or hand
            return hand
        follow = hand & SUIT_MASK[self.led_suit]
        if contract == _TRUMPS:
            return self._legal_trumps(hand, follow)
        if contract == _BARBU and self.rules.barbu_king_first_chance and (hand >> KING_OF_HEARTS) & 1:
            # K♥ at the first chance: when void in the led suit ...
            if not follow:
                return 1 << KING_OF_HEARTS
            # ... and on a heart lead once A♥ is in the trick.
            if self.led_suit == HEARTS and (self.trick_mask >> ACE_OF_HEARTS) & 1:
                return 1 << KING_OF_HEARTS
        # Follow suit if able, else any card.
        return follow or hand

    def _legal_trumps(self, hand: int, follow: int) -> int:
        rules = self.rules
        trumps_held = hand & SUIT_MASK[self.trump]
        trumps_in_trick = self.trick_mask & SUIT_MASK[self.trump]
        # Trumps above every trump in the trick (all held trumps if the trick has none).
        higher = trumps_held & ~((1 << trumps_in_trick.bit_length()) - 1)
        if self.led_suit == self.trump:
            # Trump led: follow with a trump, beating the trick's trumps if able.
            if not trumps_held:
                return hand
            if rules.trumps_must_overtrump and higher:
                return higher
            return trumps_held
        # Plain suit led: follow suit if able.
        if follow:
            return follow
        if not trumps_held:
            return hand
        if trumps_in_trick and rules.trumps_must_overtrump:
            # A trump is in the trick: beat it if able, else any card at all.
            return higher or hand
        # Void: ruff if obliged, else any card.
        return trumps_held if rules.trumps_must_ruff else hand

    def _legal_doubles(self) -> int:
        seat = self.current_player
        d = self.declarer
        named = self.named
        if self.double_pos >= NUM_PLAYERS:
            # Redouble pass: the later players who doubled this seat, not yet redoubled.
            targets = self._redouble_pass_targets(seat)
            required = 0
        elif seat == d:
            # Declarer: redouble any of those who doubled them.
            targets = sum(1 << t for t in range(NUM_PLAYERS) if (named[t] >> d) & 1)
            required = 0
        else:
            if self.contract >= Contract.TRUMPS or self.rules.doubling_targets == "declarer_only":
                targets = 1 << d
            else:
                targets = 0xF & ~(1 << seat)
            # The obligation: owing as many doubles as the declarer has hands left.
            required = 1 << d if self.owed[seat][d] >= self.hands_left(d) else 0
        return _DOUBLE_BITS[self._relative_set(seat, targets)][self._relative_set(seat, required)]

    @staticmethod
    def _relative_set(seat: int, absolute: int) -> int:
        """A 4-bit absolute seat set as the 3-bit set relative to ``seat`` (bit 0 = left)."""
        return ((absolute | absolute << NUM_PLAYERS) >> (seat + 1)) & 0b111

    def _redouble_pass_targets(self, seat: int) -> int:
        """Seats acting after ``seat`` in the four turns who doubled (not redoubled) it."""
        order = self.double_order
        after = order[order.index(seat) + 1 : NUM_PLAYERS]
        return sum(1 << t for t in after if (self.named[t] >> seat) & 1 and not (self.named[seat] >> t) & 1)

    # ------------------------------------------------------------------ actions

    def apply_action(self, action: int) -> HandResult | None:
        """Apply ``current_player``'s action; returns the HandResult if it ended a hand.

        An illegal action raises ``IllegalActionError`` and changes nothing."""
        legal = self._legal if self._legal is not None else self.legal_mask()
        if type(action) is not int:  # not isinstance: a bool is not an action
            action = _as_action(action)
        if action < 0 or not (legal >> action) & 1:
            raise IllegalActionError(self._illegal_message(action, legal))
        self._legal = None
        self.history.append(action)
        phase = self.phase
        if phase is _TRICKS:
            return self._apply_trick_card(action)
        if phase is _DOMINO:
            return self._apply_domino(action)
        if phase is _DOUBLE:
            return self._apply_double(action)
        if phase is _DECLARE:
            return self._apply_declare(action)
        if phase is _TRUMP:
            self.trump = action - TRUMP_OFFSET
        else:  # _DOMINO_RANK
            self.start_rank = action - RANK_OFFSET
        self._start_doubling()
        return None

    def _illegal_message(self, action: int, legal: int) -> str:
        # Only ids 0..84 have a text (action_text reads a negative id as an offset).
        what = f"{action} ({action_text(action)})" if 0 <= action < NUM_ACTIONS else repr(action)
        if self.phase is _GAME_OVER:
            return f"illegal action {what}: the game is over"
        options = ", ".join(f"{a} ({action_text(a)})" for a in actions_of(legal))
        return (
            f"illegal action {what} for seat {self.current_player} in phase {self.phase.name}; legal actions: {options}"
        )

    def _apply_declare(self, action: int) -> None:
        contract = Contract(action - DECLARE_OFFSET)
        self.contract = contract
        self.contracts_left[self.declarer] &= ~(1 << contract)
        if contract == _TRUMPS:
            self.phase = _TRUMP
        elif contract == Contract.DOMINO:
            self.phase = _DOMINO_RANK
        else:
            self._start_doubling()

    def _start_doubling(self) -> None:
        d = self.declarer
        self.phase = _DOUBLE
        self.double_order = [(d + 1) % 4, (d + 2) % 4, (d + 3) % 4, d]
        self.double_pos = 0
        self.current_player = self.double_order[0]

    def _apply_double(self, action: int) -> None:
        seat = self.current_player
        rel = action - DOUBLE_OFFSET
        for k in range(3):
            if (rel >> k) & 1:
                target = (seat + 1 + k) % NUM_PLAYERS
                if target == self.declarer:  # only doubles of the declarer count
                    self.owed[seat][target] = max(0, self.owed[seat][target] - 1)
                self.named[seat] |= 1 << target
        self.double_pos += 1
        if self.double_pos == NUM_PLAYERS and self.rules.redouble_pass:
            self.double_order += [p for p in self.double_order[:3] if self._redouble_pass_targets(p)]
        if self.double_pos < len(self.double_order):
            self.current_player = self.double_order[self.double_pos]
        else:
            self._start_play()

    def _start_play(self) -> None:
        self.current_player = self.declarer
        self.leader = self.declarer
        if self.contract == Contract.DOMINO:
            self.phase = _DOMINO
            self.playable = sum(1 << (s * NUM_RANKS + self.start_rank) for s in range(4))
        else:
            self.phase = _TRICKS

    def _revealed_absent(self, card: int) -> int:
        """The cards that playing ``card`` shows the player to act does not hold: the
        ones it would have had to play instead."""
        contract, suit, led = self.contract, card // NUM_RANKS, self.led_suit
        if self.trick_size == 0:
            if contract in (_NO_HEARTS, _BARBU) and suit == HEARTS:  # a heart lead: only hearts held
                return FULL_DECK & ~HEARTS_MASK
            return 0
        absent = 0 if suit == led else SUIT_MASK[led]
        if contract == _TRUMPS:
            trumps = SUIT_MASK[self.trump]
            top = (self.trick_mask & trumps).bit_length()  # cards below the trick's best trump, and it
            above = trumps & ~((1 << top) - 1)
            beaten = suit == self.trump and card >= top
            overtrump, ruff = self.rules.trumps_must_overtrump, self.rules.trumps_must_ruff
            if led == self.trump:
                if suit == led and overtrump and not beaten:
                    absent |= above
            elif suit != led:
                if self.trick_mask & trumps and overtrump:
                    if not beaten:
                        absent |= above
                elif ruff and suit != self.trump:
                    absent |= trumps
        elif contract == _BARBU and self.rules.barbu_king_first_chance and card != KING_OF_HEARTS:
            if suit != led or (led == HEARTS and (self.trick_mask >> ACE_OF_HEARTS) & 1):
                absent |= 1 << KING_OF_HEARTS
        return absent

    def _apply_trick_card(self, card: int) -> HandResult | None:
        seat = self.current_player
        self.excluded[seat] |= self._revealed_absent(card)
        bit = 1 << card
        self.hands[seat] ^= bit
        self.played[seat] |= bit
        self.trick[seat] = card
        self.trick_mask |= bit
        if self.trick_size == 0:
            self.led_suit = card // NUM_RANKS
            self.win_seat, self.win_card = seat, card
        else:
            win = self.win_card
            suit = card // NUM_RANKS
            if suit != self.led_suit:  # did not follow: void in the led suit, for all to see
                self.voids[seat] |= 1 << self.led_suit
            if (suit == win // NUM_RANKS and card > win) or (suit == self.trump and win // NUM_RANKS != suit):
                self.win_seat, self.win_card = seat, card
        self.trick_size += 1
        if self.trick_size < NUM_PLAYERS:
            self.current_player = (seat + 1) % NUM_PLAYERS
            return None
        return self._finish_trick()

    def _finish_trick(self) -> HandResult | None:
        winner = self.win_seat
        cards = self.trick_mask
        rules = self.rules
        contract = self.contract
        self.taken[winner] |= cards
        self.tricks_won[winner] += 1
        n = self.trick_number
        over = n == CARDS_PER_HAND - 1
        if contract == Contract.NO_TRICKS:
            self.points[winner] += rules.no_tricks_points
        elif contract == _NO_HEARTS:
            hearts = cards & HEARTS_MASK
            if hearts:
                ace = (hearts >> ACE_OF_HEARTS) & 1
                self.points[winner] += (
                    rules.no_hearts_points * (hearts.bit_count() - ace) + rules.no_hearts_ace_points * ace
                )
                if rules.end_no_hearts_early:
                    over = over or all(t & HEARTS_MASK == 0 for t in self.hands)
        elif contract == _NO_QUEENS:
            queens = cards & QUEENS_MASK
            if queens:
                self.points[winner] += rules.no_queens_points * queens.bit_count()
                if rules.end_no_queens_early:
                    over = over or all(t & QUEENS_MASK == 0 for t in self.hands)
        elif contract == _BARBU:
            if (cards >> KING_OF_HEARTS) & 1:
                self.points[winner] += rules.barbu_points
                over = over or rules.end_barbu_early
        elif contract == _NO_LAST_TWO:
            if n >= CARDS_PER_HAND - 2:
                self.points[winner] += rules.no_last_two_points[n - (CARDS_PER_HAND - 2)]
        else:  # Trumps
            self.points[winner] += rules.trumps_points
        if over:
            return self._finish_hand(self.points)
        self.trick_number = n + 1
        self.leader = self.current_player = winner
        self.trick = [-1] * NUM_PLAYERS
        self.trick_mask = 0
        self.trick_size = 0
        self.led_suit = -1
        return None

    def _apply_domino(self, action: int) -> HandResult | None:
        seat = self.current_player
        hands = self.hands
        if action == PASS_ACTION:
            self.excluded[seat] |= self.playable
        else:
            bit = 1 << action
            hands[seat] ^= bit
            self.played[seat] |= bit
            rank = action % NUM_RANKS
            # The card leaves the playable set; its row now reaches one rank further.
            playable = self.playable ^ bit
            if rank >= self.start_rank and rank < NUM_RANKS - 1:
                playable |= bit << 1
            if rank <= self.start_rank and rank > 0:
                playable |= bit >> 1
            self.playable = playable
            if not hands[seat]:
                self.out_order.append(seat)
                if len(self.out_order) == NUM_PLAYERS - 1:
                    last = next(p for p in range(NUM_PLAYERS) if hands[p])
                    raw = [0] * NUM_PLAYERS
                    for place, p in enumerate(self.out_order + [last]):
                        raw[p] = self.rules.domino_scores[place]
                    return self._finish_hand(raw)
        # Next seat to the left that still holds cards.
        nxt = (seat + 1) % NUM_PLAYERS
        while not hands[nxt]:
            nxt = (nxt + 1) % NUM_PLAYERS
        self.current_player = nxt
        return None

    def _finish_hand(self, raw: list[int]) -> HandResult:
        levels = self.levels()
        settled = settle(raw, levels)
        result = HandResult(
            hand=self.hand_number,
            declarer=self.declarer,
            contract=CONTRACT_NAMES[self.contract],
            trump=self.trump if self.trump >= 0 else None,
            starting_rank=self.start_rank if self.start_rank >= 0 else None,
            dealt=self.dealt,
            levels=tuple(tuple(row) for row in levels),
            raw=tuple(raw),
            settled=tuple(settled),
            tricks=tuple(self.tricks_won),
            out_order=tuple(self.out_order),
        )
        self.points = list(raw)  # Domino's raw scores come only now
        self.results.append(result)
        for p in range(NUM_PLAYERS):
            self.scores[p] += settled[p]
        self.hand_number += 1
        if self.hand_number == NUM_HANDS:
            self.phase = _GAME_OVER
            self.current_player = -1
        else:
            self._start_hand()
        return result


def _as_action(action) -> int:
    """numpy integers and other index-like values as a plain int."""
    if isinstance(action, bool) or not hasattr(action, "__index__"):
        raise IllegalActionError(f"an action is an int 0..{NUM_ACTIONS - 1}, not {action!r}")
    return action.__index__()


__all__ = [
    "BarbuState",
    "Contract",
    "CONTRACT_NAMES",
    "DealError",
    "HandResult",
    "IllegalActionError",
    "NUM_ACTIONS",
    "Phase",
    "actions_of",
    "card_text",
    "contract_total",
    "declarer_of_hand",
    "parse_deal",
    "settle",
]
