"""The games and replays kept by ``barbu serve`` (``barbu_env.play.web.server``), and tables as JSON.

A :class:`Game` is one game on the server: its state, its agents (None at the person's
seat), what happened since its hand began; ``Game.apply`` plays the person's action, then
the agents until the person's next turn (``barbu_env.envs.stepping.play_turns``). A table
("view") is a JSON object (``view_json``): seats are absolute (0-3), cards are ids 0-51,
actions ids 0-84 with their text. :class:`Games` keeps the games in play per client,
within ``barbu_env.play.web.limits.Limits``; :class:`Replays` keeps the replays' answers.
"""

from __future__ import annotations

import math
import reprlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...util.extras import needs

with needs("web", "barbu_env.play.web.games"):  # one line if the extra is missing
    from fastapi import HTTPException

    from .limits import Limits

from ...agents import Agent
from ...envs.stepping import action_mask, play_turns
from ...game.cards import SUIT_MASK, cards_of
from ...game.constants import CONTRACT_NAMES, NUM_PLAYERS, Phase
from ...game.engine import BarbuState, HandResult
from ...view.table import TableView, choice_text, contract_label
from ..terminal import action_said, hand_summary, trick_taken


def view_json(view: TableView, labels: Sequence[str] | None) -> dict[str, Any]:
    """A ``TableView`` as plain JSON values (see the module docstring); without ``labels``
    (a replay's steps, whose labels are sent once) it has no ``"labels"``."""
    out: dict[str, Any] = {"viewer": view.viewer} | ({"labels": list(labels)} if labels is not None else {})
    return out | {
        "phase": view.phase.name,
        "hand_number": view.hand_number + 1,
        "declarer": view.declarer,
        "contract": contract_label(view.contract) if view.contract >= 0 else None,
        "contract_text": view.contract_text(),
        "trump": view.trump,
        "start_rank": view.start_rank,
        "doubles": [list(d) for d in view.doubles()],
        "scores": view.scores,
        "tricks_won": view.tricks_won,
        "points": view.points,
        "to_act": view.to_act,
        "leader": view.leader,
        "trick_number": view.trick_number + 1,
        "trick": [list(t) for t in view.trick],
        "hands": {str(seat): _held(cards) for seat, cards in view.hands.items()},
        "cards_left": view.cards_left,
        "domino_rows": [cards_of(view.laid() & SUIT_MASK[s]) for s in range(len(SUIT_MASK))],
        "out_order": view.out_order,
        "legal": [{"id": a, "text": choice_text(a)} for a in view.legal],
    }


def _held(cards: int) -> list[int]:
    """A hand as held: spades first, high to low within a suit."""
    return [c for s in (3, 2, 1, 0) for c in reversed(cards_of(cards & SUIT_MASK[s]))]


@dataclass
class Game:
    """One game on the server: its state, its agents (None at the person's seat), the
    lines of what happened since the hand began, the last completed trick."""

    id: str
    state: BarbuState
    agents: list[Agent | None]
    labels: list[str]
    human: int
    hands: int
    log: list[str] = field(default_factory=list)
    last_trick: dict[str, Any] | None = None
    last_result: list[str] | None = None
    end_view: TableView | None = None  # the table as the last hand to play ended (the state has dealt the next)
    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: str = "local"  # the address of the client that started it
    searches: bool = False  # whether an agent of it searches (SEARCH_AGENTS): its moves take a search slot
    used: float = field(default_factory=time.monotonic)  # when a request last named it

    @property
    def over(self) -> bool:
        return self.state.is_terminal or len(self.state.results) >= self.hands

    def view(self) -> dict[str, Any]:
        state, seat = self.state, self.human
        mask = action_mask(state, seat) if state.current_player == seat and not self.over else None
        view = self.end_view or TableView.from_observation(state.observe(seat), seat, mask)
        out = view_json(view, self.labels)
        out.update(
            game=self.id,
            log=self.log[-60:],
            last_trick=self.last_trick,
            last_result=self.last_result,
            over=self.over,
            hands_to_play=self.hands,
            hands_played=len(state.results),
        )
        return out

    def apply(self, action: int) -> None:
        """The person's action (legal: checked by the caller), then the agents' actions
        until the person is to act again or the game is over."""
        self._step(action)
        self.advance()

    def advance(self) -> None:
        """The agents' actions until the person is to act or the game is over."""
        play_turns(self.state, self.agents, until=self.human, hands=self.hands, apply=self._step)

    def _step(self, action: int) -> HandResult | None:
        state, action = self.state, int(action)
        seat, phase = state.current_player, state.phase
        if phase is Phase.DECLARE:
            self.log = []
        tricks, points = state.tricks_won, state.points
        trick = [[p, c] for p, c in _trick_of(state)]
        result = state.apply_action(action)
        who = "You" if seat == self.human else f"P{seat} {self.labels[seat]}"
        self.log.append(f"{who}: {action_said(action, seat)}")
        if (taken := trick_taken(state, phase, result, tricks, points)) is not None:
            winner, gained = taken
            self.last_trick = {"cards": trick + [[seat, action]], "winner": winner, "points": gained}
            self.log.append(f"Trick to P{winner}" + (f" ({gained:+d})" if gained else ""))
        if result is not None:
            names = [f"P{p} {self.labels[p]}" for p in range(NUM_PLAYERS)]
            self.last_result = hand_summary(result, state.scores, names)
            self.log.extend(self.last_result)
            self.last_trick = self.last_trick if phase is Phase.TRICKS else None
            if self.over and not state.is_terminal:
                self.end_view = _hand_end_view(result, state.scores, self.human, phase)
        return result


def _hand_end_view(result: HandResult, scores: list[int], viewer: int, phase: Phase) -> TableView:
    """The table as a hand ends (every card played, its tricks and points), from ``viewer``'s seat."""
    levels = result.levels
    return TableView(
        viewer=viewer,
        phase=phase,
        hand_number=result.hand,
        declarer=result.declarer,
        contract=CONTRACT_NAMES.index(result.contract),
        trump=result.trump if result.trump is not None else -1,
        start_rank=result.starting_rank if result.starting_rank is not None else -1,
        named=[[levels[i][j] >= (1 if i < j else 2) for j in range(NUM_PLAYERS)] for i in range(NUM_PLAYERS)],
        doubling_done=[True] * NUM_PLAYERS,
        contracts_left=[0] * NUM_PLAYERS,
        scores=list(scores),
        tricks_won=list(result.tricks),
        points=list(result.raw),
        to_act=-1,
        leader=-1,
        trick_number=0,
        trick=[],
        played=list(result.dealt),
        domino_playable=0,
        out_order=list(result.out_order),
        cards_left=[0] * NUM_PLAYERS,
        hand=0,
        legal=[],
        hands={},
    )


def _trick_of(state: BarbuState) -> list[tuple[int, int]]:
    if state.phase is not Phase.TRICKS:
        return []
    seats = [(state.leader + k) % NUM_PLAYERS for k in range(NUM_PLAYERS)]
    return [(p, state.trick[p]) for p in seats if state.trick[p] >= 0]


class Replays(OrderedDict):
    """Replays' answers (``bytes``) by id, the least recently used dropped past ``limit`` of
    them or past ``max_bytes`` together."""

    def __init__(self, limit: int, max_bytes: int):
        super().__init__()
        self.limit, self.max_bytes, self.size = limit, max_bytes, 0
        self.lock = threading.Lock()

    def add(self, item_id: str, item: bytes) -> None:
        with self.lock:
            self[item_id] = item
            self.size += len(item)
            while len(self) > self.limit or (self.size > self.max_bytes and len(self) > 1):
                self.size -= len(self.popitem(last=False)[1])

    def find(self, item_id: str, what: str) -> Any:
        with self.lock:
            if item_id not in self:
                raise HTTPException(404, f"no {what} {reprlib.repr(item_id)} (it may have expired: start a new one)")
            self.move_to_end(item_id)
            return self[item_id]


class Games:
    """The games in play by id, the least recently used first, each with its owner (a
    client's address): at most ``limits.games_per_client`` per owner and ``limits.games``
    in all. A new game past an owner's share replaces that owner's least recently used game
    untouched for ``limits.own_idle`` seconds (``limits.done_idle`` if it is over), else it
    is refused 429; past the table's bound, any game untouched for ``limits.idle``
    (``done_idle`` if over), else 503. So one client never drops another's game in play."""

    def __init__(self, limits: Limits, clock: Any = time.monotonic):
        self.limits, self.clock = limits, clock
        self.games: OrderedDict[str, Game] = OrderedDict()
        self.owned: dict[str, int] = {}  # games and games being made, by owner
        self.making = 0  # games being made (counted in owned, not yet in games)
        self.lock = threading.Lock()

    @contextmanager
    def room(self, owner: str) -> Iterator[Any]:
        """Room for a new game of ``owner`` (or an ``HTTPException`` 429/503 at once, before
        any work); yields ``put(game)``, which keeps the game made in that room."""
        with self.lock:
            self._make_room(owner)
            self.owned[owner] = self.owned.get(owner, 0) + 1
            self.making += 1
        kept = False

        def put(game: Game) -> None:
            nonlocal kept
            with self.lock:
                game.owner, game.used = owner, self.clock()
                self.games[game.id] = game
                self.making -= 1
                kept = True

        try:
            yield put
        finally:
            if not kept:
                with self.lock:
                    self.making -= 1
                    self._forget(owner)

    def find(self, game_id: str) -> Game:
        with self.lock:
            game = self.games.get(game_id)
            if game is None:
                raise HTTPException(404, f"no game {reprlib.repr(game_id)} (it may have expired: start a new one)")
            self.games.move_to_end(game_id)
            game.used = self.clock()
            return game

    def _forget(self, owner: str) -> None:
        self.owned[owner] -= 1
        if not self.owned[owner]:
            del self.owned[owner]

    def _drop_one(self, idle: float, owner: str | None = None) -> float | None:
        """Drop the least recently used game (of ``owner``, if given) untouched for ``idle``
        seconds (``limits.done_idle`` if it is over, when that is shorter); ``None`` if one
        was dropped, else the seconds until one will be (``inf`` if there is none)."""
        now, wait = self.clock(), math.inf
        for game_id, game in self.games.items():
            if owner is not None and game.owner != owner:
                continue
            gives_way = min(idle, self.limits.done_idle) if game.over else idle
            if now - game.used >= gives_way:
                del self.games[game_id]
                self._forget(game.owner)
                return None
            wait = min(wait, gives_way - (now - game.used))
        return wait

    def _make_room(self, owner: str) -> None:
        limits = self.limits
        if self.owned.get(owner, 0) >= limits.games_per_client:
            wait = self._drop_one(limits.own_idle, owner)
            if wait is not None:
                retry = max(1, math.ceil(wait)) if math.isfinite(wait) else math.ceil(limits.own_idle)
                raise HTTPException(
                    429,
                    f"this address has {limits.games_per_client} games in play, the most one address may "
                    f"keep: finish one, or start a new one in {retry} s (a game untouched for "
                    f"{limits.own_idle:g} s, or a finished one for {limits.done_idle:g} s, then gives way)",
                    headers={"Retry-After": str(retry)},
                )
        if len(self.games) + self.making >= limits.games:
            wait = self._drop_one(limits.idle)
            if wait is not None:
                retry = max(1, math.ceil(wait)) if math.isfinite(wait) else math.ceil(limits.idle)
                raise HTTPException(
                    503,
                    f"the table keeps {limits.games} games in play, its most: try again in {retry} s",
                    headers={"Retry-After": str(retry)},
                )
