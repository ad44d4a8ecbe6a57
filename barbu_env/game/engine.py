"""The Barbu game engine: the rules of docs/rules.md, with no RL framework in sight.

``BarbuState`` is the whole game (28 hands), or a prefix of it (``episode``: the first
seven hands, or the first hand; ``EPISODE_HANDS``, docs/rules.md#episodes). It is
mutable and advanced only through ``apply_action``; ``legal_mask`` / ``legal_actions``
give the actions of the seat to act (``current_player``). Seats are ints 0-3 (left of
seat s is s+1 mod 4), cards are ints 0-51 and a set of cards is a 52-bit int
(``cards.py``). Legality is bit operations on those ints. Randomness (deals, the first
declarer) comes from one explicit ``numpy.random.Generator``. The engine never calls an
agent and never prints. A state's text is ``str(state)``, ``barbu_env.game.render.render_state(state)``.

The rules and the observation are implemented once, in the numba kernels
(``barbu_env.game._kernels``, which also step the batched engine ``barbu_env.game.vector``):
a ``BarbuState`` is a view over one game's kernel state, row 0 of arrays shaped like
the batch's. Its fields are properties read from those arrays (each read returns a
new int, list or tuple; assigning a whole field writes the arrays, which tests use to
build positions), its methods are kernel calls, ``clone`` copies the arrays. The
kernels are compiled on first use (a few seconds) and cached on disk.

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
DOMINO); after hand 28 (or the episode's last hand) the phase is GAME_OVER. Every
decision is a turn, even a forced one.

>>> import numpy as np
>>> s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=2)
>>> s.phase.name, s.current_player, s.legal_actions()
('DECLARE', 2, [52, 53, 54, 55, 56, 57, 58])
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..util.files import quote
from . import _kernels as K
from .actions import NUM_ACTIONS, action_text, actions_of
from .cards import FULL_DECK, NUM_CARDS, card_text, hand_text, to_card
from .constants import (
    CARDS_PER_HAND,
    CONTRACT_NAMES,
    EPISODE_HANDS,
    NUM_HANDS,
    NUM_PLAYERS,
    Contract,
    Phase,
    Refusal,
)
from .observation import INFO_DIM, OBS_DIM
from .render import render_state
from .rules import Rules, load_rules

if TYPE_CHECKING:
    from .position import Positions

_PHASES = tuple(Phase)
_CONTRACTS = tuple(Contract)
_EPISODE_NAMES = {hands: name for name, hands in EPISODE_HANDS.items()}


class IllegalActionError(ValueError):
    """An action that is not legal in the current state. The state is left unchanged."""


def action_id(action: Any) -> int:
    """``action`` as an int if it is an action id: an integer 0..84 (a Python or numpy
    integer, a 0-d integer array: what ``operator.index`` takes; not a bool); else
    ``IllegalActionError`` naming it (in at most 40 characters).

    >>> action_id(np.int64(52)), action_id(np.array(52))
    (52, 52)
    >>> action_id(np.array([52]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    barbu_env.game.engine.IllegalActionError: action array([52]) is not an action id: an integer 0..84 ...
    """
    try:
        if not isinstance(action, (bool, np.bool_)) and 0 <= (number := operator.index(action)) < NUM_ACTIONS:
            return number
    except TypeError:
        pass
    raise IllegalActionError(
        f"action {quote(action)} is not an action id: an integer 0..{NUM_ACTIONS - 1} "
        "(a Python or numpy integer, or a 0-d integer array)"
    )


class DealError(ValueError):
    """Deals given to ``reset``/``new_game`` that are not four hands of 13 distinct cards."""


def episode_hands(episode: str) -> int:
    """The hands an episode of mode ``episode`` plays (``EPISODE_HANDS``); an unknown mode
    raises ``ValueError`` listing the modes."""
    if not isinstance(episode, str) or episode not in EPISODE_HANDS:
        modes = ", ".join(f"{name!r} ({n} hand{'s' * (n > 1)})" for name, n in EPISODE_HANDS.items())
        raise ValueError(f"episode must be one of {modes}, not {quote(episode)}")
    return EPISODE_HANDS[episode]


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


def parse_deal(deal: Sequence[Sequence[int | str]]) -> tuple[int, int, int, int]:
    """Four hands (ids or text) as four 52-bit ints; anything but 4 x 13 distinct cards
    raises ``DealError``."""
    if isinstance(deal, (str, bytes)) or not hasattr(deal, "__len__") or len(deal) != NUM_PLAYERS:
        raise DealError(f"a deal is four hands (seats 0-3), got {quote(deal, 160)}")
    hands = []
    for seat, hand in enumerate(deal):
        if isinstance(hand, (str, bytes)):
            hand = hand.replace(",", " ").split()
        if not hasattr(hand, "__len__"):
            raise DealError(f"seat {seat} is dealt {quote(hand, 120)}, not a list of 13 cards")
        mask = 0
        for c in hand:
            try:
                mask |= 1 << to_card(c)
            except ValueError as e:
                raise DealError(f"seat {seat}: {e}") from None
        if len(hand) != CARDS_PER_HAND or mask.bit_count() != CARDS_PER_HAND:
            raise DealError(f"seat {seat} is dealt {quote(hand, 120)}, not 13 distinct cards")
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


def _scalar(field: int, doc: str, cards: bool = False) -> property:
    """A value held in the kernels' int fields (``_kernels.F_*``) or (``cards``) card words (``K_*``)."""

    def get(self: BarbuState) -> int:
        return int((self._cards if cards else self._ints)[0, field])

    def put(self: BarbuState, value: int) -> None:
        (self._cards if cards else self._ints)[0, field] = value
        self._refresh()

    return property(get, put, doc=doc)


def _per_seat(field: int, doc: str, cards: bool = False) -> property:
    """Four values, one per seat, in the kernels' int fields or (``cards``) card words."""

    def get(self: BarbuState) -> list[int]:
        return (self._cards if cards else self._ints)[0, field : field + NUM_PLAYERS].tolist()

    def put(self: BarbuState, values: Sequence[int]) -> None:
        (self._cards if cards else self._ints)[0, field : field + NUM_PLAYERS] = [int(v) for v in values]
        self._refresh()

    return property(get, put, doc=doc)


#: BarbuState's slots that pickling leaves out, remade on load: the state arrays travel once, as _games.
_REMADE = ("_games", "_ints", "_cards", "_hblock", "_hblock64", "_preset", "_obs64")


class BarbuState:
    """The complete game state: a view over one game's kernel state. Create with
    ``BarbuState.new_game``."""

    __slots__ = (
        "rules",  # Rules in force
        "rng",  # numpy Generator the first declarer and the deals past ``deals`` were drawn from
        "deals",  # preset deals: list of 4-tuples of card sets, for hands 0, 1, ...
        "first_declarer",  # seat declaring hand 0
        "results",  # HandResult of every finished hand
        "history",  # every action applied, in order
        "_rp",  # the rules as the kernels' switches (_kernels.rules_params)
        "_games",  # _kernels.Games of one row: ints, cards, hblock (and hblock64), preset (the 28 deals)
        # _games' arrays by name, for the calls made at every decision (unpacking _games costs more):
        "_ints",  # int64 [1, F]: the game's int fields (_kernels.F_*)
        "_cards",  # uint64 [1, K]: its card sets and cached legal set (_kernels.K_*)
        "_hblock",  # float32 [1, 4, 132]: each seat's cached hand-level observation block
        "_hblock64",  # _hblock seen as uint64
        "_preset",  # uint64 [1, 28, 4]: the 28 deals
        "_rewards",  # float32 [1, 4]: settled scores of the hand that just ended
        "_obs",  # float32 [1, OBS_DIM]: the last observation written
        "_obs64",  # _obs seen as uint64
        "_obs_seat",  # seat whose observation of the current state is in _obs, -1 if none
        "_cur",  # seat to act (cached from the kernels)
        "_legal",  # legal-action set of the seat to act (cached from the kernels), None when stale
    )

    # ------------------------------------------------------------------ creation

    @classmethod
    def new_game(
        cls,
        rules: Rules | str | dict | None = None,
        rng: np.random.Generator | None = None,
        first_declarer: int | None = None,
        deals: Sequence | None = None,
        episode: str = "game",
    ) -> BarbuState:
        """A new game: the first declarer is ``first_declarer`` or drawn from ``rng``;
        hand h is ``deals[h]`` where given, else dealt from ``rng`` (all drawn now, in
        hand order, after the first declarer). ``episode`` (``EPISODE_HANDS``): the game
        is over after 28 hands (``"game"``), 7 (``"round"``) or 1 (``"hand"``), everything
        up to then exactly as in the whole game."""
        hands = episode_hands(episode)
        s = cls._blank(rules, rng if rng is not None else np.random.default_rng())
        if deals is None:
            deals = []
        if isinstance(deals, (str, bytes)) or not hasattr(deals, "__len__") or len(deals) > NUM_HANDS:
            raise DealError(f"deals must be a list of at most {NUM_HANDS} deals")
        s.deals = [parse_deal(d) for d in deals]
        if first_declarer is None:
            first_declarer = int(s.rng.integers(NUM_PLAYERS))
        if isinstance(first_declarer, bool) or first_declarer not in range(NUM_PLAYERS):
            raise ValueError(f"first_declarer must be a seat 0-3, not {quote(first_declarer)}")
        s.first_declarer = int(first_declarer)
        s._set_games(K.new_games(1))
        given = len(s.deals)
        for h in range(given):
            s._games.preset[0, h] = s.deals[h]
        s._games.preset[0, given:] = _random_deals(s.rng, NUM_HANDS - given)
        cur, lo, hi = K.game_new(*s._games, s._rp, s.first_declarer, hands)
        s._cur = cur
        s._legal = lo | hi << 64
        return s

    @classmethod
    def from_position(
        cls, positions: Positions, index: int = 0, rules: Rules | str | dict | None = None, episode: str = "game"
    ) -> BarbuState:
        """The game of row ``index`` of ``positions`` (``barbu_env.game.position``), as it
        stands, ending as an episode of mode ``episode`` ending from there (``"hand"``: at
        the end of the hand it is in; ``"round"``: of its group of seven hands). Hands
        after the current one come from the position's deals where it has them, else
        from a fresh Generator. ``results`` and ``history`` start empty."""
        hands = episode_hands(episode)
        s = cls._blank(rules, np.random.default_rng())
        g = np.asarray(positions.ints[index], dtype=np.int64)
        s.first_declarer = int(g[K.F_FIRST])
        games = K.new_games(1)
        games.ints[0] = g
        games.ints[0, K.F_EPISODE] = hands
        games.ints[0, K.F_DIRTY] = 0xF
        games.cards[0] = np.asarray(positions.cards[index], dtype=np.uint64)
        known = int(games.ints[0, K.F_PRESET])
        games.preset[0] = np.asarray(positions.preset[index], dtype=np.uint64)
        games.preset[0, known:] = _random_deals(s.rng, NUM_HANDS - known)
        games.ints[0, K.F_PRESET] = NUM_HANDS
        s._set_games(games)
        s.deals = [tuple(int(x) for x in games.preset[0, h]) for h in range(known)]
        s._cur = int(s._ints[0, K.F_CUR])
        s._refresh()
        return s

    @classmethod
    def _blank(cls, rules: Rules | str | dict | None, rng: np.random.Generator) -> BarbuState:
        """A state under ``rules`` drawing from ``rng``, with no game yet: empty results and
        history, its rules' kernel parameters, blank reward and observation buffers."""
        s = cls.__new__(cls)
        s.rules = load_rules(rules)
        s.rng = rng
        s.results = []
        s.history = []
        s._rp = K.rules_params(s.rules)
        s._rewards = np.zeros((1, NUM_PLAYERS), dtype=np.float32)
        s._obs = np.zeros((1, OBS_DIM), dtype=np.float32)
        s._obs64 = s._obs.view(np.uint64)
        s._obs_seat = -1
        return s

    def deal_hand(self, deal: Sequence[Sequence[int | str]]) -> None:
        """Deal the current hand again as ``deal`` (four hands of 13 cards, as for
        ``new_game``): only before its first decision (phase DECLARE), for callers whose
        deal arrives after the hand began (the OpenSpiel game's chance nodes). The hand
        starts over from it; later hands keep their deals."""
        if self.phase is not Phase.DECLARE:
            raise ValueError(f"a hand is dealt before its declaration, not in phase {self.phase.name}")
        hands = parse_deal(deal)
        h = self.hand_number
        known = [tuple(int(x) for x in self._preset[0, k]) for k in range(len(self.deals), h)]
        self.deals = self.deals[:h] + known + [hands] + self.deals[h + 1 :]
        self._set_games(self._games._replace(preset=self._preset.copy()))  # clones share the preset
        cur, lo, hi = K.game_deal(*self._games, self._rp, np.array(hands, dtype=np.uint64))
        self._cur = cur
        self._legal = lo | hi << 64
        self._obs_seat = -1

    def clone(self) -> BarbuState:
        """An independent copy (its arrays copied; the rng is shared, but every deal of the
        game was drawn at ``new_game``, so a clone plays on with the same deals)."""
        c = BarbuState.__new__(BarbuState)
        c.rules = self.rules
        c.rng = self.rng
        c.deals = self.deals[:]
        c.first_declarer = self.first_declarer
        c.results = self.results[:]
        c.history = self.history[:]
        c._rp = self._rp
        hblock = self._games.hblock.copy()
        c._set_games(K.Games(self._ints.copy(), self._cards.copy(), hblock, hblock.view(np.uint64), self._preset))
        c._rewards = self._rewards.copy()
        c._obs = self._obs.copy()
        c._obs64 = c._obs.view(np.uint64)
        c._obs_seat = self._obs_seat
        c._cur = self._cur
        c._legal = self._legal
        return c

    def __getstate__(self) -> dict:
        """For pickle and deepcopy: the slots but the uint64 views (and the aliases of the
        state arrays), remade on load."""
        state = {name: getattr(self, name) for name in self.__slots__ if name not in _REMADE}
        games = self._games
        state["_games"] = (games.ints, games.cards, games.hblock, games.preset)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        ints, cards, hblock, preset = state.pop("_games")
        for name, value in state.items():
            setattr(self, name, value)
        self._set_games(K.Games(ints, cards, hblock, hblock.view(np.uint64), preset))
        self._obs64 = self._obs.view(np.uint64)

    def _set_games(self, games: K.Games) -> None:
        """``games`` as this state's arrays."""
        self._games = games
        self._ints, self._cards, self._hblock, self._hblock64, self._preset = games

    # ------------------------------------------------------------------ fields
    #
    # Each field reads the kernel arrays and returns a new value (lists are copies). Assigning
    # a field writes the arrays and recomputes what depends on it (for tests that build
    # positions): ``state.hands = hands``, never ``state.hands[seat] = ...``.

    phase = property(lambda self: _PHASES[self._ints[0, K.F_PHASE]], doc="Phase")
    declarer = _scalar(K.F_DECLARER, "seat declaring this hand")
    hand_number = _scalar(K.F_HAND, "0..27; once the game is over, the hands played (28 for a whole game)")
    trump = _scalar(K.F_TRUMP, "trump suit (Trumps) or -1")
    start_rank = _scalar(K.F_RANK, "Domino starting rank or -1")
    double_pos = _scalar(K.F_DPOS, "index into double_order of the seat to act")
    trick_size = _scalar(K.F_TSIZE, "cards in the current trick (0..3 between actions)")
    trick_number = _scalar(K.F_TRICK_NO, "0-based number of the current trick")
    led_suit = _scalar(K.F_LED, "suit led to the current trick, -1 before the lead")
    leader = _scalar(K.F_LEADER, "seat that led the current trick")
    win_seat = _scalar(K.F_WIN_SEAT, "seat winning the current trick so far")
    win_card = _scalar(K.F_WIN_CARD, "card winning the current trick so far")
    trick_mask = _scalar(K.K_TRICK, "cards in the current trick", cards=True)
    playable = _scalar(K.K_PLAYABLE, "Domino: cards that could be placed on the layout now", cards=True)
    hands = _per_seat(K.K_HANDS, "the four hands now (card sets)", cards=True)
    played = _per_seat(K.K_PLAYED, "played[i]: cards seat i has played this hand", cards=True)
    taken = _per_seat(K.K_TAKEN, "taken[i]: cards in the tricks seat i has won this hand", cards=True)
    tricks_won = _per_seat(K.F_WON, "tricks won per seat this hand")
    points = _per_seat(K.F_POINTS, "raw points per seat so far this hand")
    scores = _per_seat(K.F_SCORES, "game totals per seat (sum of settled hand scores)")
    named = _per_seat(K.F_NAMED, "named[i]: set (4-bit, absolute seats) of players seat i named while doubling")
    trick = _per_seat(K.F_TRICK, "trick[i]: card seat i played to the current trick, -1 if none")
    voids = _per_seat(K.F_VOIDS, "voids[i]: 4-bit set of suits seat i has shown void in this hand (did not follow)")
    excluded = _per_seat(
        K.K_EXCL, "excluded[i]: cards the rules have shown seat i does not hold (this hand)", cards=True
    )
    contracts_left = _per_seat(K.F_LEFT, "per seat: 7-bit set of contracts not yet declared (Contract bits)")

    @property
    def episode(self) -> str:
        """The episode mode (``EPISODE_HANDS``): ``"game"``, ``"round"`` or ``"hand"``."""
        return _EPISODE_NAMES[int(self._ints[0, K.F_EPISODE])]

    @property
    def current_player(self) -> int:
        """Seat to act; -1 when the game is over."""
        return self._cur

    @current_player.setter
    def current_player(self, seat: int) -> None:
        self._ints[0, K.F_CUR] = self._cur = seat
        self._refresh()

    @property
    def contract(self) -> Contract | int:
        """Contract of this hand, or -1 before the declaration."""
        c = self._ints[0, K.F_CONTRACT]
        return _CONTRACTS[c] if c >= 0 else -1

    @contract.setter
    def contract(self, contract: int) -> None:
        self._ints[0, K.F_CONTRACT] = contract
        self._refresh()

    @property
    def dealt(self) -> tuple[int, int, int, int]:
        """The four hands as dealt this hand (card sets)."""
        return tuple(self._cards[0, K.K_DEALT : K.K_DEALT + NUM_PLAYERS].tolist())

    @dealt.setter
    def dealt(self, hands: Sequence[int]) -> None:
        self._cards[0, K.K_DEALT : K.K_DEALT + NUM_PLAYERS] = [int(h) for h in hands]
        self._refresh()

    @property
    def double_order(self) -> list[int]:
        """Seats taking doubling turns, in order (grows with redouble_pass)."""
        return self._ints[0, K.F_ORDER : K.F_ORDER + self._ints[0, K.F_DLEN]].tolist()

    @property
    def out_order(self) -> list[int]:
        """Domino: seats in the order they went out."""
        return self._ints[0, K.F_OUT : K.F_OUT + self._ints[0, K.F_NOUT]].tolist()

    @property
    def owed(self) -> list[list[int]]:
        """owed[i][d]: doubles seat i still owes declarer d in d's 7 hands."""
        o = self._ints[0, K.F_OWED : K.F_OWED + NUM_PLAYERS * NUM_PLAYERS].tolist()
        return [o[NUM_PLAYERS * i : NUM_PLAYERS * (i + 1)] for i in range(NUM_PLAYERS)]

    @owed.setter
    def owed(self, owed: Sequence[Sequence[int]]) -> None:
        self._ints[0, K.F_OWED : K.F_OWED + NUM_PLAYERS * NUM_PLAYERS] = [v for row in owed for v in row]
        self._refresh()

    # ------------------------------------------------------------------ queries

    @property
    def is_terminal(self) -> bool:
        return bool(self._ints[0, K.F_PHASE] == K.PH_GAME_OVER)

    def levels(self) -> list[list[int]]:
        """levels[i][j]: 0, 1 (double) or 2 (redoubled) between seats i and j this hand."""
        return _levels(self.named)

    def legal_mask(self) -> int:
        """The legal actions of ``current_player`` as an 85-bit int (0 once the game is over)."""
        legal = self._legal
        if legal is None:
            legal = self._refresh()
        return legal

    def legal_actions(self) -> list[int]:
        """The legal actions of ``current_player``, ascending."""
        return actions_of(self.legal_mask())

    def refusal(self, action: int) -> Refusal:
        """Why ``action`` is not legal for ``current_player`` (``Refusal.LEGAL`` exactly when
        it is legal): the rule that forbids it, from the kernels, next to the legality code
        (``barbu_env.view.refusals`` puts it into words)."""
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < NUM_ACTIONS:
            return Refusal.NO_SUCH_ACTION
        return Refusal(K.refusal(self._ints, self._cards, self._rp, 0, int(action)))

    # ------------------------------------------------------------------ actions

    def apply_action(self, action: int, observe: bool = False) -> HandResult | None:
        """Apply ``current_player``'s action; returns the HandResult if it ended a hand.

        An illegal action raises ``IllegalActionError`` and changes nothing. With
        ``observe`` the same kernel call also writes the observation of the next seat to
        act, which ``observe(current_player)`` then returns without another (for callers
        that observe every decision, as the environments do)."""
        legal = self._legal
        if legal is None:
            legal = self._refresh()
        if type(action) is not int:  # not isinstance: a bool is not an action
            action = _as_action(action)
        if action < 0 or not (legal >> action) & 1:
            raise IllegalActionError(self._illegal_message(action, legal))
        self.history.append(action)
        status, cur, lo, hi = K.game_step(
            self._ints,
            self._cards,
            self._hblock,
            self._hblock64,
            self._preset,
            self._rp,
            self._rewards,
            self._obs,
            self._obs64,
            action,
            observe,
        )
        self._cur = cur
        self._obs_seat = cur if observe else -1
        self._legal = lo | hi << 64
        if status == K.ST_PLAYING:
            return None
        return self._hand_result()

    def _illegal_message(self, action: int, legal: int) -> str:
        # Only ids 0..84 have a text (action_text reads a negative id as an offset).
        what = f"{action} ({action_text(action)})" if 0 <= action < NUM_ACTIONS else repr(action)
        if self.is_terminal:
            return f"illegal action {what}: the game is over"
        options = ", ".join(f"{a} ({action_text(a)})" for a in actions_of(legal))
        return (
            f"illegal action {what} for seat {self.current_player} in phase {self.phase.name}; legal actions: {options}"
        )

    def _hand_result(self) -> HandResult:
        """The record of the hand that just ended, added to ``results``."""
        result = hand_result(self._ints[0], self._cards[0])
        self.results.append(result)
        return result

    def _refresh(self) -> int:
        """After a field was assigned: the kernels recompute the legal set; the cached
        observation blocks are dropped."""
        lo, hi = K.game_refresh(self._ints, self._cards, self._rp)
        self._legal = lo | hi << 64
        self._obs_seat = -1
        return self._legal

    # ------------------------------------------------------------------ observations

    def observe(self, seat: int) -> np.ndarray:
        """``seat``'s observation (``barbu_env.game.observation``) as a new float32 array."""
        if seat != self._obs_seat:
            K.game_observe(*self._games, self._rp, self._obs, self._obs64, seat)
            self._obs_seat = seat
        return self._obs[0].copy()

    def information_state(self, seat: int) -> np.ndarray:
        """``seat``'s information state (``observation.INFO_SLICES``: its observation, then
        its perfect recall of the hand under way) as a new float32 array [INFO_DIM]."""
        out = np.empty((1, INFO_DIM), dtype=np.float32)
        K.game_observe(*self._games, self._rp, out, out.view(np.uint64), int(seat))
        return out[0]

    def hand_rows(self) -> np.ndarray:
        """The four hands now (absolute seats) as float32 card rows [4, 52]."""
        out = np.empty((1, NUM_PLAYERS * NUM_CARDS), dtype=np.float32)
        K.game_hands(self._cards, out.view(np.uint64))
        return out.reshape(NUM_PLAYERS, NUM_CARDS)

    def state_vector(self) -> np.ndarray:
        """The global state (``observation.STATE_DIM`` values): all hands (absolute
        seats), then seat 0's observation less its hand."""
        return np.concatenate([self.hand_rows().reshape(-1), self.observe(0)[NUM_CARDS:]])

    # ------------------------------------------------------------------ text

    def __str__(self) -> str:
        return render_state(self)


def hand_result(g: np.ndarray, cards: np.ndarray) -> HandResult:
    """The record of the last hand a game finished (the kernels' ``F_REC_*``), from its int
    fields ``g`` and card words ``cards`` (one game's rows)."""
    trump, rank = int(g[K.F_REC_TRUMP]), int(g[K.F_REC_RANK])
    return HandResult(
        hand=int(g[K.F_REC_HAND]),
        declarer=int(g[K.F_REC_DECLARER]),
        contract=CONTRACT_NAMES[g[K.F_REC_CONTRACT]],
        trump=trump if trump >= 0 else None,
        starting_rank=rank if rank >= 0 else None,
        dealt=tuple(cards[K.K_REC_DEALT : K.K_REC_DEALT + NUM_PLAYERS].tolist()),
        levels=tuple(tuple(row) for row in _levels(g[K.F_REC_NAMED : K.F_REC_NAMED + NUM_PLAYERS].tolist())),
        raw=tuple(g[K.F_REC_RAW : K.F_REC_RAW + NUM_PLAYERS].tolist()),
        settled=tuple(g[K.F_REC_SETTLED : K.F_REC_SETTLED + NUM_PLAYERS].tolist()),
        tricks=tuple(g[K.F_REC_WON : K.F_REC_WON + NUM_PLAYERS].tolist()),
        out_order=tuple(g[K.F_REC_OUT : K.F_REC_OUT + g[K.F_REC_NOUT]].tolist()),
    )


def _as_action(action) -> int:
    """numpy integers and other index-like values as a plain int."""
    if isinstance(action, bool) or not hasattr(action, "__index__"):
        raise IllegalActionError(f"an action is an int 0..{NUM_ACTIONS - 1}, not {quote(action)}")
    return action.__index__()


def _levels(named: Sequence[int]) -> list[list[int]]:
    """levels[i][j] from the seats each seat named while doubling."""
    n = named
    return [[((n[i] >> j) & 1) + ((n[j] >> i) & 1) for j in range(NUM_PLAYERS)] for i in range(NUM_PLAYERS)]


def _random_deals(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` deals, uint64 [n, 4] (four hands as card sets each), each from one permutation
    of the deck: in one call, the very draws of ``n`` calls of ``rng.permutation(52)``."""
    decks = np.tile(np.arange(NUM_CARDS), (n, 1))
    rng.permuted(decks, axis=1, out=decks)
    cards = decks.reshape(n, NUM_PLAYERS, CARDS_PER_HAND).astype(np.uint64)
    return np.bitwise_or.reduce(np.left_shift(np.uint64(1), cards), axis=2)


__all__ = [
    "BarbuState",
    "Contract",
    "CONTRACT_NAMES",
    "DealError",
    "HandResult",
    "IllegalActionError",
    "NUM_ACTIONS",
    "Phase",
    "Refusal",
    "actions_of",
    "card_text",
    "contract_total",
    "episode_hands",
    "parse_deal",
]
