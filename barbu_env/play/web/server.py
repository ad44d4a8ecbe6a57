"""The web app behind ``barbu serve``: a FastAPI app whose games live on the server.

FastAPI (on Starlette, served by uvicorn) because every request body is declared as a
pydantic model: a malformed request is refused with a 422 that names the field before
any game code runs, and the rest of the checks (unknown games, illegal actions, records
that do not replay) answer with their own 4xx and a message, never a changed game.

========================================  ===================================================
request                                   answer
========================================  ===================================================
``GET /``, ``GET /replay``                the table page, the replay viewer (``static/``)
``GET /api/setup``                        the seats, the opponents one may choose, the presets
``POST /api/games``                       a new game ``{"opponents": [3 names], "hands": N,
                                          "rules": preset, "seed": S}`` (all optional): 201
                                          and the table from the person's seat
``GET /api/games/{id}``                   the table from the person's seat
``POST /api/games/{id}/actions``          ``{"action": id}``: the person's action (then the
                                          agents play until the person's next turn); 422 with
                                          the reason if it is illegal, 409 once the game is over
``GET /api/games/{id}/record``            the game so far as a game record (``barbu replay``)
``POST /api/replays``                     a game record (JSON): checked by replaying it, then
                                          201 and ``{"id", "labels", "final_scores", "steps"}``:
                                          its steps, trick by trick, every hand shown
``GET /api/replays/{id}``                 the same bytes again (kept, not rebuilt)
========================================  ===================================================

Every request body is strict JSON: a number must be an integer where one is asked
(``true``, ``"3"`` or ``3.0`` are not), finite and in its range; ``NaN``/``Infinity``, an
integer of any length out of range, JSON nested too deeply, and bytes that are not UTF-8
are refused, all with a 422 whose ``detail`` is one line naming the field (or the body)
and quoting at most a few dozen characters of what was sent; no answer's ``detail`` is
longer than ``MAX_DETAIL`` characters. A body over its size (``MAX_RECORD_BYTES`` for a
record, ``MAX_REQUEST_BYTES`` for anything else) is refused with a 413 as soon as that many
bytes have arrived, whether or not it declared its length, so a request costs the server
at most that much memory. A replay's answer sends the seat labels once (the steps carry
none) and is at most ``REPLAY_FACTOR`` times the size of the record uploaded; the replays
kept hold at most ``MAX_REPLAY_BYTES`` of answers together.

What a client may hold (``barbu_env.play.web.limits.Limits``): each client address keeps at
most 16 games and the table 128 (a client over its share is answered 429 and nobody
else's game is dropped); a search agent (``SEARCH_AGENTS``) chosen in the browser plays
with a per-move budget (``BROWSER_BUDGETS``), and at most two requests at once play a
search agent's moves (another is answered 503 with ``Retry-After``, its game unchanged);
slow clients are timed out and connections capped (``barbu_env.play.web.limits``).

A table ("view") is a JSON object: seats are absolute (0-3), cards are ids 0-51
(``suit * 13 + rank``), actions are ids 0-84 with their text (``barbu_env.view.table.choice_text``).
The person's view is read from their observation, so it holds only what their seat may know.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ...util.extras import needs

with needs("web", "barbu_env.play.web.server"):  # one line if the extra is missing
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from pydantic import BaseModel, ConfigDict, Field, ValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .limits import (
        MAX_RECORD_BYTES,
        MAX_REQUEST_BYTES,
        BodyLimit,
        Limits,
        connection_cap,
        protocol_class,
        quiet_logs,
    )

from ...agents import Agent, agent_names, make_agent, parse_agent_spec
from ...agents.registry import spec_with
from ...evaluation.records import GameRecord, RecordError, printable, replay_record
from ...game.actions import AGENTS, NUM_ACTIONS, mask_array
from ...game.cards import SUIT_MASK, cards_of
from ...game.constants import CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS, Phase, Refusal
from ...game.engine import BarbuState, HandResult
from ...game.rules import Rules, RulesError, load_rules, preset_names
from ...view.refusals import refusal_text
from ...view.table import TableView, choice_text, contract_label, record_steps, state_view, trick_winner
from ..terminal import action_said, hand_summary, seat_labels

STATIC = Path(__file__).resolve().parent / "static"
#: Replays kept at once; the least recently used is dropped past this (games: ``Limits``).
MAX_REPLAYS = 32
#: A replay's answer is at most this many times the size of the record uploaded (a whole
#: game's is about 11 times; the labels are sent once, so long names add their size once).
REPLAY_FACTOR = 32
#: The replays' answers kept at once, in bytes together (the oldest dropped past this).
MAX_REPLAY_BYTES = 64_000_000
#: The longest agent name or preset name a request may hold.
MAX_NAME = 200
#: The longest ``detail`` of any refusal; a field's value is quoted in at most ``QUOTE``.
MAX_DETAIL = 600
QUOTE = 40
#: An integer literal longer than this in a request is kept as its length only (no field
#: takes one; Python will not even read one of over 4,300 digits).
MAX_DIGITS = 30
#: Agents that search at each move, whose cost a browser's choice must not leave open: a
#: game seating one takes a search slot (``Limits.searches``) for each request that plays.
SEARCH_AGENTS = frozenset({"openspiel-ismcts", "pimc", "pimc-ppo"})
#: The per-move budget of a search agent a browser chooses by its registered name (about
#: 0.2 s of CPU per move for ``openspiel-ismcts`` where its default 1,000 simulations take
#: 1-2 s); a table's own agents (``--agents``) play as their specs say.
BROWSER_BUDGETS: dict[str, dict[str, Any]] = {"openspiel-ismcts": {"simulations": 200}}
HUMAN = "human"
INT64 = 2**63


# ---------------------------------------------------------------------- requests


Name = Annotated[str, Field(max_length=MAX_NAME)]


class NewGame(BaseModel):
    """A new game: the three opponents (left, opposite, right of the person), the number of
    hands, a rules preset and a seed; each optional. Strict: no value is converted."""

    model_config = ConfigDict(extra="forbid", strict=True)
    opponents: list[Name] | None = Field(default=None, min_length=NUM_PLAYERS - 1, max_length=NUM_PLAYERS - 1)
    hands: int = Field(default=NUM_HANDS, ge=1, le=NUM_HANDS)
    rules: Name | None = None
    seed: int | None = Field(default=None, ge=0, lt=INT64)


class Action(BaseModel):
    """The person's action: an id 0-84. Strict: no value is converted."""

    model_config = ConfigDict(extra="forbid", strict=True)
    action: int = Field(ge=0, lt=NUM_ACTIONS)


def _cut(text: str, width: int = QUOTE) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _short(value: Any, width: int = QUOTE) -> str:
    """``value`` as JSON text (``NaN`` and all), cut to ``width`` characters."""
    try:
        text = json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value) if not isinstance(value, (list, dict)) else f"<a {type(value).__name__}>"
    return _cut(text, width)


class BigInt:
    """An integer literal of more than ``MAX_DIGITS`` digits in a request, kept as its
    length (no field takes one, and Python reads none of over 4,300 digits)."""

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _request_int(text: str) -> int | BigInt:
    return int(text) if len(text) <= MAX_DIGITS else BigInt(text)


def request_json(body: bytes) -> Any:
    """A request body as JSON; an integer too long for any field kept as a ``BigInt`` (so
    that the model names its field). Raises ``ValueError`` saying what is wrong with the body."""
    try:
        return json.loads(body, parse_int=_request_int)
    except RecursionError:
        raise ValueError("body: JSON nested too deeply") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"body: not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"body: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None


def parse_request(model: type[BaseModel], body: bytes) -> Any:
    """A request body (an empty body or ``null``: ``{}``, every default) as ``model``, or
    an ``HTTPException`` 422 naming the field and quoting it short."""
    try:
        data = request_json(body) if body.strip() else None
    except ValueError as e:
        raise HTTPException(422, f"invalid request: {e}") from None
    try:
        return model.model_validate({} if data is None else data)
    except ValidationError as e:
        raise HTTPException(422, validation_detail(e.errors())) from None


def validation_detail(errors: Sequence[dict[str, Any]]) -> str:
    """Pydantic's errors as one line: each field, what is wrong, what was sent (quoted short)."""
    parts = []
    for error in errors[:5]:
        where = ".".join(_cut(printable(p)) for p in error.get("loc", ()) if p != "body") or "body"
        value = error.get("input")
        if isinstance(value, BigInt):
            parts.append(f"{where}: {value!r} is out of range")
            continue
        got = f" (got {_short(value)})" if error.get("type") != "missing" and "input" in error else ""
        parts.append(f"{where}: {error.get('msg', 'invalid')}{got}")
    more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    return "invalid request: " + "; ".join(parts) + more


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _int64(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -INT64 <= (value := int(text)) < INT64:
        raise ValueError(f"integer {text[:20]}{'...' if len(text) > 20 else ''} is outside 64 bits")
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def strict_json(body: bytes) -> Any:
    """A request body as JSON, refusing what no record holds: ``NaN``, ``Infinity``, numbers
    out of range, integers outside 64 bits. Raises ``ValueError`` saying why."""
    try:
        return json.loads(body, parse_constant=_no_constant, parse_int=_int64, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 ({e.reason})") from None


# ---------------------------------------------------------------------- views as JSON


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


# ---------------------------------------------------------------------- games


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
        mask = mask_array(state.legal_mask()) if state.current_player == seat and not self.over else None
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
        while not self.over and self.state.current_player != self.human:
            seat = self.state.current_player
            obs = {"observation": self.state.observe(seat), "action_mask": mask_array(self.state.legal_mask())}
            self._step(int(self.agents[seat].act(obs, AGENTS[seat])))

    def _step(self, action: int) -> None:
        state = self.state
        seat, phase = state.current_player, state.phase
        if phase is Phase.DECLARE:
            self.log = []
        tricks, points = state.tricks_won, state.points
        trick = [[p, c] for p, c in _trick_of(state)]
        result = state.apply_action(action)
        who = "You" if seat == self.human else f"P{seat} {self.labels[seat]}"
        self.log.append(f"{who}: {action_said(action, seat)}")
        if phase is Phase.TRICKS and (result is not None or state.trick_size == 0):
            won = result.tricks if result is not None else state.tricks_won
            raw = result.raw if result is not None else state.points
            winner = trick_winner(tricks, won)
            gained = raw[winner] - points[winner]
            self.last_trick = {"cards": trick + [[seat, action]], "winner": winner, "points": gained}
            self.log.append(f"Trick to P{winner}" + (f" ({gained:+d})" if gained else ""))
        if result is not None:
            names = [f"P{p} {self.labels[p]}" for p in range(NUM_PLAYERS)]
            self.last_result = hand_summary(result, state.scores, names)
            self.log.extend(self.last_result)
            self.last_trick = self.last_trick if phase is Phase.TRICKS else None
            if self.over and not state.is_terminal:
                self.end_view = _hand_end_view(result, state.scores, self.human, phase)


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


def refusal(view: TableView, action: int, code: Refusal | None = None) -> str:
    """Why ``action`` is not legal for the viewer, in words, and what it may do instead
    (``barbu_env.view.refusals.refusal_text``); ``code``: the kernels' reason, when the caller
    has the game state (``BarbuState.refusal``), else read from the view."""
    return refusal_text(view, action, code)


# ---------------------------------------------------------------------- the app


class _Store(OrderedDict):
    """Replays by id, the least recently used dropped past ``limit`` items or, with
    ``max_bytes``, past that many bytes of items (``bytes`` values) together."""

    def __init__(self, limit: int, max_bytes: int | None = None):
        super().__init__()
        self.limit, self.max_bytes, self.size = limit, max_bytes, 0
        self.lock = threading.Lock()

    def add(self, item_id: str, item: Any) -> None:
        with self.lock:
            self[item_id] = item
            self.size += len(item) if self.max_bytes is not None else 0
            over_bytes = self.max_bytes is not None and self.size > self.max_bytes
            while len(self) > self.limit or (over_bytes and len(self) > 1):
                _, dropped = self.popitem(last=False)
                self.size -= len(dropped) if self.max_bytes is not None else 0
                over_bytes = self.max_bytes is not None and self.size > self.max_bytes

    def find(self, item_id: str, what: str) -> Any:
        with self.lock:
            if item_id not in self:
                raise HTTPException(
                    404, f"no {what} {_cut(printable(item_id))!r} (it may have expired: start a new one)"
                )
            self.move_to_end(item_id)
            return self[item_id]


class _Games:
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
                raise HTTPException(404, f"no game {_cut(printable(game_id))!r} (it may have expired: start a new one)")
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


def create_app(
    specs: Sequence[str],
    rules: Rules | str | dict | None = None,
    seed: int | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """The app for a table of four seats, ``specs`` (exactly one ``"human"``, the others
    agent names or checkpoint paths), under ``rules``; games are seeded from ``seed``;
    ``limits`` bound what a client may hold (``barbu_env.play.web.limits``; ``serve`` reads them
    from ``app.state.limits``)."""
    specs = list(specs)
    if len(specs) != NUM_PLAYERS or specs.count(HUMAN) != 1:
        raise ValueError(f"a table is {NUM_PLAYERS} seats with exactly one 'human', not {specs}")
    limits = limits or Limits()
    default_rules = load_rules(rules)
    human = specs.index(HUMAN)
    for spec in specs:  # an unknown name or a missing file fails now, not at the first game
        if spec != HUMAN:
            make_agent(spec, seed=0, rules=default_rules)
    opponents = [specs[(human + k) % NUM_PLAYERS] for k in range(1, NUM_PLAYERS)]  # left, opposite, right
    # Opponents a browser may choose: the registered names (search agents with their
    # budget) and the specs given here (never other paths: a request does not load files).
    allowed = {name: _with_budget(name) for name in agent_names()}
    allowed.update(zip(seat_labels(specs), specs))
    allowed.pop(HUMAN, None)
    seeds = np.random.SeedSequence(seed)
    games, replays = _Games(limits), _Store(MAX_REPLAYS, MAX_REPLAY_BYTES)
    search_slots = threading.BoundedSemaphore(limits.searches)
    app = FastAPI(title="Barbu", docs_url=None, redoc_url=None)
    app.state.limits, app.state.search_slots = limits, search_slots
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(BodyLimit, limits=limits, large_paths=frozenset({"/api/replays"}))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_detail(exc.errors())}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = _cut(" ".join(str(exc.detail).split()), MAX_DETAIL)
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @contextmanager
    def search_slot(game: Game) -> Iterator[None]:
        """A search slot for a request that plays ``game``'s agents, if one of them
        searches; none free within ``limits.search_wait``: 503, nothing played."""
        if not game.searches:
            yield
            return
        if not search_slots.acquire(timeout=limits.search_wait):
            raise HTTPException(
                503,
                f"the table is busy: {limits.searches} requests are already playing search agents' moves "
                f"({', '.join(sorted(SEARCH_AGENTS))}), its most at once; try again in a moment",
                headers={"Retry-After": "2"},
            )
        try:
            yield
        finally:
            search_slots.release()

    @app.get("/", include_in_schema=False)
    def table_page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/replay", include_in_schema=False)
    def replay_page() -> FileResponse:
        return FileResponse(STATIC / "replay.html")

    @app.get("/api/setup")
    def setup() -> dict[str, Any]:
        return {
            "human_seat": human,
            "opponents": seat_labels(opponents),
            "choices": sorted(allowed),
            "budgets": {name: allowed[name] for name in sorted(allowed) if allowed[name] != name},
            "presets": preset_names(),
            "hands": NUM_HANDS,
            "games_per_client": limits.games_per_client,
        }

    @app.post("/api/games", status_code=201)
    def new_game(
        request: NewGame | None = Depends(_new_game_request),  # noqa: B008 (FastAPI's way to parse a body)
        http: Request = None,  # type: ignore[assignment]  # FastAPI passes the request; None when called directly
    ) -> dict[str, Any]:
        request = request or NewGame()
        chosen = request.opponents or seat_labels(opponents)
        unknown = [_cut(printable(name)) for name in chosen if name not in allowed]
        if unknown:
            raise HTTPException(422, f"unknown opponent(s) {unknown}; choose among {sorted(allowed)}")
        if request.rules is not None and request.rules not in preset_names():
            raise HTTPException(
                422, f"unknown rules preset {_cut(printable(request.rules))!r}; presets: {preset_names()}"
            )
        owner = http.client.host if http is not None and http.client is not None else "local"
        seat_specs = list(specs)
        for k, name in enumerate(chosen, start=1):
            seat_specs[(human + k) % NUM_PLAYERS] = allowed[name]
        with games.room(owner) as put:
            game_rules = load_rules(request.rules) if request.rules is not None else default_rules
            child = np.random.SeedSequence(request.seed) if request.seed is not None else seeds.spawn(1)[0]
            game_seed, *agent_seeds = child.spawn(NUM_PLAYERS + 1)
            try:
                agents: list[Agent | None] = [
                    None
                    if p == human
                    else make_agent(seat_specs[p], seed=int(s.generate_state(1)[0]), rules=game_rules)
                    for p, s in zip(range(NUM_PLAYERS), agent_seeds)
                ]
            except ImportError as e:  # an agent whose extra this server lacks
                raise HTTPException(422, f"opponents: not available on this server ({e})") from None
            labels = ["you" if p == human else seat_labels([seat_specs[p]])[0] for p in range(NUM_PLAYERS)]
            state = BarbuState.new_game(game_rules, np.random.default_rng(game_seed))
            game = Game(secrets.token_hex(8), state, agents, labels, human, request.hands)
            game.searches = any(_searches(spec) for p, spec in enumerate(seat_specs) if p != human)
            with search_slot(game), game.lock:
                game.advance()
            put(game)
        return game.view()

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str) -> dict[str, Any]:
        game = games.find(game_id)
        with game.lock:
            return game.view()

    @app.post("/api/games/{game_id}/actions")
    def act(game_id: str, request: Action = Depends(_action_request)) -> dict[str, Any]:  # noqa: B008
        game = games.find(game_id)
        with game.lock:
            if game.over:
                raise HTTPException(409, "the game is over: start a new one")
            state = game.state
            if state.current_player != game.human:  # the agents always play on to the person's turn
                raise HTTPException(409, f"it is P{state.current_player}'s turn, not yours")
            if not (state.legal_mask() >> request.action) & 1:
                view = state_view(state, game.human)
                raise HTTPException(422, f"not allowed: {refusal(view, request.action, state.refusal(request.action))}")
            with search_slot(game):
                game.apply(request.action)
            return game.view()

    @app.get("/api/games/{game_id}/record")
    def record(game_id: str) -> JSONResponse:
        game = games.find(game_id)
        with game.lock:
            rec = GameRecord.from_state(game.state, agents=game.labels, metadata={"source": "barbu serve"})
        return JSONResponse(
            rec.to_dict(), headers={"Content-Disposition": f'attachment; filename="barbu_{game_id}.json"'}
        )

    @app.post("/api/replays", status_code=201)
    def new_replay(body: bytes = Depends(_body)) -> Response:  # noqa: B008 (FastAPI's way to take the raw body)
        try:
            data = strict_json(body)
        except ValueError as e:
            raise HTTPException(422, f"not a valid game record: not JSON ({e})") from None
        try:
            rec = GameRecord.from_dict(data)
            replay_record(rec)  # the record must replay to its own results
            state = BarbuState.new_game(
                rec.rules_obj(), rng=np.random.default_rng(0), first_declarer=rec.first_declarer, deals=rec.deals
            )
        except (RecordError, RulesError, ValueError) as e:
            raise HTTPException(422, f"not a valid game record: {e}") from None
        labels = rec.agents if len(rec.agents) == NUM_PLAYERS else [f"P{p}" for p in range(NUM_PLAYERS)]
        steps = [
            {**view_json(step.view, None), "note": step.note, "winner": step.winner}
            for step in record_steps(state, rec.actions)
        ]
        replay_id = secrets.token_hex(8)
        replay = {"id": replay_id, "labels": labels, "final_scores": rec.final_scores, "steps": steps}
        content = json.dumps(replay, ensure_ascii=False, separators=(",", ":")).encode()
        replays.add(replay_id, content)
        return Response(content, status_code=201, media_type="application/json")

    @app.get("/api/replays/{replay_id}")
    def get_replay(replay_id: str) -> Response:
        return Response(replays.find(replay_id, "replay"), media_type="application/json")

    return app


async def _body(request: Request) -> bytes:
    return await request.body()


async def _new_game_request(request: Request) -> NewGame:
    return parse_request(NewGame, await request.body())


async def _action_request(request: Request) -> Action:
    return parse_request(Action, await request.body())


def _with_budget(name: str) -> str:
    """The spec a browser's choice of the registered agent ``name`` is built from: the
    name, with its per-move budget if it is a search agent that has one."""
    for key, value in BROWSER_BUDGETS.get(name, {}).items():
        name = spec_with(name, key, value)
    return name


def _searches(spec: str) -> bool:
    """Whether an agent spec names a search agent (``SEARCH_AGENTS``)."""
    return parse_agent_spec(spec)[0] in SEARCH_AGENTS


def uvicorn_config(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> Any:
    """uvicorn's ``Config`` for ``app`` under its limits (``app.state.limits``): the h11
    protocol with the head timeout and the connection cap (``limits.protocol_class``), the
    accept backlog and head size of the limits, no websockets. Raises ``ValueError`` if the
    process may open too few files for the cap (``limits.connection_cap``)."""
    import uvicorn

    limits: Limits = app.state.limits
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=protocol_class(limits, connection_cap(limits)),
        ws="none",
        backlog=limits.backlog,
        h11_max_incomplete_event_size=limits.head_bytes,
    )


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, sock: Any = None) -> None:
    """Run ``app`` with uvicorn (``uvicorn_config``) until interrupted, on ``host:port`` or
    on the bound socket ``sock``; the server's failures are logged one line per kind per
    ``limits.log_interval`` (``limits.quiet_logs``)."""
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app, host, port))
    quiet_logs(app.state.limits.log_interval)
    server.run(sockets=[sock] if sock is not None else None)


__all__ = [
    "BROWSER_BUDGETS",
    "MAX_DETAIL",
    "MAX_RECORD_BYTES",
    "MAX_REQUEST_BYTES",
    "MAX_REPLAYS",
    "MAX_REPLAY_BYTES",
    "REPLAY_FACTOR",
    "SEARCH_AGENTS",
    "BigInt",
    "BodyLimit",
    "Limits",
    "create_app",
    "parse_request",
    "refusal",
    "request_json",
    "serve",
    "strict_json",
    "uvicorn_config",
    "validation_detail",
    "view_json",
]
