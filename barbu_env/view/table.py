"""The table as one seat sees it: plain values for the terminal seat (``barbu_env.play.terminal``),
the frames (``barbu_env.view.frames``) and the browser table (``barbu_env.play.web``).

A :class:`TableView` is read from an observation (``BarbuState.observe(seat)`` or the
``"observation"`` an environment gives an agent), so a view holds exactly what that seat
may know: its own hand and the public facts. Seats in a view are absolute (0-3);
``view.name(seat)`` names a seat relative to the viewer ("you", "left", ...).
:func:`state_view` builds the view of a seat from a game state, and can reveal every hand
(for watching or replaying a game, never for a seat that plays).

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=2)
>>> v = state_view(s, viewer=2)
>>> v.phase.name, v.declarer, v.to_act, v.hand.bit_count(), [a - 52 for a in v.legal]
('DECLARE', 2, 2, 13, [0, 1, 2, 3, 4, 5, 6])
>>> v.name(3), v.name(2), contract_label(3)
('left', 'you', 'No King of Hearts (Barbu)')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..game.actions import DECLARE_OFFSET, DOUBLE_OFFSET, PASS_ACTION, RANK_OFFSET, TRUMP_OFFSET
from ..game.cards import RANK_NAMES, SUIT_MASK, SUIT_NAMES, cards_of, rank_of, suit_of
from ..game.constants import CONTRACT_LABELS, NUM_HANDS, NUM_PLAYERS, Contract, Phase
from ..game.observation import read
from ..game.rules import Rules

if TYPE_CHECKING:
    from ..game.engine import BarbuState, HandResult

#: Suit symbols, clubs to spades (``SUIT_SYMBOLS[suit]``).
SUIT_SYMBOLS = "♣♦♥♠"
#: Seat names relative to a viewer: the viewer, the next to play (left), opposite, right.
RELATIVE_SEAT_NAMES = ("you", "left", "opposite", "right")


def contract_label(contract: int) -> str:
    """``contract_label(2) == "No Queens"``."""
    return CONTRACT_LABELS[contract]


def card_label(card: int) -> str:
    """A card as people write it: ``10♥``, ``Q♠``."""
    return f"{RANK_NAMES[rank_of(card)]}{SUIT_SYMBOLS[suit_of(card)]}"


@dataclass
class TableView:
    """The table from ``viewer``'s seat (absolute seats throughout)."""

    viewer: int
    phase: Phase
    hand_number: int  # 0-based; NUM_HANDS once the game is over
    declarer: int
    contract: int  # Contract, or -1 while the declarer chooses
    trump: int  # trump suit, or -1
    start_rank: int  # Domino starting rank, or -1
    named: list[list[bool]]  # named[i][j]: seat i doubled seat j this hand
    doubling_done: list[bool]
    contracts_left: list[int]  # per seat: 7-bit set of contracts not yet declared
    scores: list[int]  # game totals
    tricks_won: list[int]
    points: list[int]  # raw points this hand so far
    to_act: int  # -1 when the game is over
    leader: int  # seat that led the current trick (-1 outside trick play)
    trick_number: int  # 0-based
    trick: list[tuple[int, int]]  # (seat, card) of the current trick, in play order
    played: list[int]  # card sets each seat played this hand
    domino_playable: int  # Domino: cards that could go on the layout now
    out_order: list[int]  # Domino: seats in the order they went out
    cards_left: list[int]
    hand: int  # the viewer's cards
    legal: list[int]  # the viewer's legal actions (empty when another seat is to act)
    hands: dict[int, int] = field(default_factory=dict)  # every hand this view may show: the viewer's, or all four
    #: The observation the view was read from, and the rules in force (the observation does not
    #: carry them): what ``barbu_env.view.refusals`` asks the kernels why an action is refused.
    observation: np.ndarray | None = field(default=None, repr=False, compare=False)
    rules: Rules | None = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ reading

    @classmethod
    def from_observation(
        cls,
        observation: np.ndarray,
        viewer: int,
        action_mask: np.ndarray | None = None,
        rules: Rules | None = None,
    ) -> TableView:
        """The view in ``observation`` (``viewer``'s, a float32 vector); ``action_mask``
        gives the legal actions, ``rules`` the rules in force (default: the standard ones)."""
        r = read(observation, viewer)
        phase = Phase(r.phase)
        trick = []
        if phase is Phase.TRICKS and r.leader >= 0:
            for k in range(NUM_PLAYERS):
                seat = (r.leader + k) % NUM_PLAYERS
                if r.trick[seat]:
                    trick.append((seat, cards_of(r.trick[seat])[0]))
        legal = np.flatnonzero(np.asarray(action_mask)).tolist() if action_mask is not None else []
        return cls(
            viewer=viewer,
            phase=phase,
            hand_number=NUM_HANDS if phase is Phase.GAME_OVER else r.hand_number,
            declarer=r.declarer,
            contract=r.contract,
            trump=r.trump,
            start_rank=r.domino_rank,
            named=[[bool(r.named[i] >> j & 1) for j in range(NUM_PLAYERS)] for i in range(NUM_PLAYERS)],
            doubling_done=list(r.doubling_done),
            contracts_left=list(r.contracts_left),
            scores=list(r.scores),
            tricks_won=list(r.tricks_won),
            points=list(r.points),
            to_act=r.to_act,
            leader=r.leader,
            trick_number=max(r.trick_number, 0),
            trick=trick,
            played=list(r.played),
            domino_playable=r.domino_playable,
            out_order=list(r.out_order),
            cards_left=list(r.cards_left),
            hand=r.hand,
            legal=legal,
            hands={viewer: r.hand},
            observation=np.asarray(observation, dtype=np.float32),
            rules=rules,
        )

    # ------------------------------------------------------------------ derived

    def name(self, seat: int) -> str:
        """``seat`` relative to the viewer: "you", "left", "opposite" or "right"."""
        return RELATIVE_SEAT_NAMES[(seat - self.viewer) % NUM_PLAYERS]

    def level(self, i: int, j: int) -> int:
        """0, 1 (doubled) or 2 (redoubled) between seats i and j."""
        return int(self.named[i][j]) + int(self.named[j][i])

    def doubles(self) -> list[tuple[int, int, int]]:
        """(seat, seat, level) of every pair that doubled this hand, lower seat first."""
        return [
            (i, j, self.level(i, j)) for i in range(NUM_PLAYERS) for j in range(i + 1, NUM_PLAYERS) if self.level(i, j)
        ]

    def laid(self) -> int:
        """Domino: the cards on the layout (every card played this hand)."""
        return self.played[0] | self.played[1] | self.played[2] | self.played[3]

    def domino_rows(self) -> list[tuple[int, int, int] | None]:
        """Domino: per suit (clubs to spades) the (low, high) ranks laid and their count, or None."""
        rows: list[tuple[int, int, int] | None] = []
        for s in range(len(SUIT_MASK)):
            laid = cards_of(self.laid() & SUIT_MASK[s])
            rows.append((rank_of(laid[0]), rank_of(laid[-1]), len(laid)) if laid else None)
        return rows

    def contract_text(self) -> str:
        """``"Trumps (♥ hearts)"``, ``"Domino from 7"``, ``"(declarer choosing)"``."""
        if self.phase is Phase.GAME_OVER:
            return "game over"
        if self.contract < 0:
            return "(declarer choosing)"
        text = contract_label(self.contract)
        if self.contract == Contract.TRUMPS:
            text += f" ({SUIT_SYMBOLS[self.trump]} {SUIT_NAMES[self.trump]})" if self.trump >= 0 else ""
        if self.contract == Contract.DOMINO and self.start_rank >= 0:
            text += f" from {RANK_NAMES[self.start_rank]}"
        return text


def state_view(state: BarbuState, viewer: int, reveal: bool = False) -> TableView:
    """``viewer``'s view of ``state``; ``reveal`` adds every hand (for watching a game)."""
    view = TableView.from_observation(state.observe(viewer), viewer, rules=state.rules)
    if viewer == state.current_player:
        view.legal = state.legal_actions()
    if reveal:
        view.hands = dict(enumerate(state.hands))
    return view


def choice_text(action: int, viewer: int | None = None) -> str:
    """An action for people: "play Q♥", "declare No Queens", "trumps ♥ hearts", "Domino from 7",
    "double left and right" (seats relative to the actor), "double nobody", "pass"."""
    if action < DECLARE_OFFSET:
        return f"play {card_label(action)}"
    if action < TRUMP_OFFSET:
        return f"declare {contract_label(action - DECLARE_OFFSET)}"
    if action < RANK_OFFSET:
        suit = action - TRUMP_OFFSET
        return f"trumps {SUIT_SYMBOLS[suit]} {SUIT_NAMES[suit]}"
    if action < DOUBLE_OFFSET:
        return f"Domino from {RANK_NAMES[action - RANK_OFFSET]}"
    if action < PASS_ACTION:
        named = [RELATIVE_SEAT_NAMES[k + 1] for k in range(NUM_PLAYERS - 1) if (action - DOUBLE_OFFSET) >> k & 1]
        return "double " + (" and ".join(named) if named else "nobody")
    return "pass"


#: What ``record_steps`` makes a step of: each completed trick, or each card.
FRAME_EVERY = ("trick", "card")


@dataclass
class Step:
    """One step of a replayed game: the table (every hand shown), a note for it ("trick to
    P2", the hand's scores), and the seat that won the trick shown (-1 if none)."""

    view: TableView
    note: str | None = None
    winner: int = -1


def record_steps(
    state: BarbuState,
    actions: Sequence[int],
    viewer: int = 0,
    every: str = "trick",
    hands: Iterable[int] | None = None,
) -> Iterator[Step]:
    """The steps of a game played from ``state`` (a new game on a record's deals) by
    ``actions``, every hand shown, from ``viewer``'s seat: one as each hand's play begins
    (contract and doubles made), then one per completed trick (its four cards, the winner
    named) or, with ``every="card"``, per card, the hand's last one with its scores. In
    Domino a "trick" is a round of four turns. ``hands`` (1-based) keeps some hands only."""
    wanted = set(hands) if hands is not None else None
    turns = 0
    for action in actions:
        if state.is_terminal:
            break
        phase, seat, number = state.phase, state.current_player, state.hand_number
        keep = wanted is None or number + 1 in wanted
        playing = phase in (Phase.TRICKS, Phase.DOMINO)
        before = state_view(state, viewer, reveal=True) if keep and playing else None
        tricks_before = state.tricks_won
        result = state.apply_action(action)
        if not keep:
            continue
        if phase is Phase.DOUBLE and state.phase in (Phase.TRICKS, Phase.DOMINO):
            turns = 0
            yield Step(state_view(state, viewer, reveal=True), "play begins")
            continue
        if before is None:
            continue
        view = _after(before, seat, action)
        view.to_act = state.current_player if result is None else -1
        turns += 1
        if phase is Phase.TRICKS:
            if result is not None or state.trick_size == 0:
                won = list(result.tricks) if result is not None else state.tricks_won
                view.tricks_won, view.points = won, list(result.raw) if result is not None else state.points
                winner = trick_winner(tricks_before, won)
                yield Step(view, _result_note(result) if result else f"trick to P{winner}", winner)
            elif every == "card":
                yield Step(view)
        elif every == "card" or turns % NUM_PLAYERS == 0 or result is not None:
            if result is not None:
                view.out_order = list(result.out_order)
            yield Step(view, _result_note(result) if result else None)


def _after(view: TableView, seat: int, action: int) -> TableView:
    """``view`` (every hand shown) once ``seat`` has made ``action`` (a card or a pass)."""
    if action == PASS_ACTION:
        return view
    view.hands = dict(view.hands)
    view.hands[seat] &= ~(1 << action)
    view.cards_left = list(view.cards_left)
    view.cards_left[seat] -= 1
    view.played = list(view.played)
    view.played[seat] |= 1 << action
    if view.phase is Phase.TRICKS:
        view.trick = view.trick + [(seat, action)]
    return view


def _result_note(result: HandResult) -> str:
    return f"hand {result.hand + 1} scores: " + "  ".join(f"P{p} {v:+d}" for p, v in enumerate(result.settled))


def hand_suits(hand: int) -> list[list[int]]:
    """A hand's cards per suit, spades first (as hands are held), high to low within a suit."""
    return [list(reversed(cards_of(hand & SUIT_MASK[s]))) for s in (3, 2, 1, 0)]


def trick_winner(before: Sequence[int], after: Sequence[int]) -> int:
    """The seat whose tricks-won count went up between two reads, -1 if none did."""
    return next((p for p in range(NUM_PLAYERS) if after[p] > before[p]), -1)


__all__ = [
    "CONTRACT_LABELS",
    "RELATIVE_SEAT_NAMES",
    "SUIT_SYMBOLS",
    "FRAME_EVERY",
    "Step",
    "TableView",
    "card_label",
    "choice_text",
    "contract_label",
    "hand_suits",
    "record_steps",
    "state_view",
    "trick_winner",
]
