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
(``true``, ``"3"`` or ``3.0`` are not), finite and in its range, and ``NaN``/``Infinity`` or
an integer outside 64 bits is refused, all with a 422 whose ``detail`` is one line naming
the field. A body over ``MAX_RECORD_BYTES`` is refused with a 413 as soon as that many
bytes have arrived, whether or not it declared its length (``BodyLimit``), so a request
costs the server at most that much memory. A replay's answer sends the seat labels once
(the steps carry none) and is at most ``REPLAY_FACTOR`` times the size of the record
uploaded; the replays kept hold at most ``MAX_REPLAY_BYTES`` of answers together.

A table ("view") is a JSON object: seats are absolute (0-3), cards are ids 0-51
(``suit * 13 + rank``), actions are ids 0-84 with their text (``barbu_env.table.choice_text``).
The person's view is read from their observation, so it holds only what their seat may know.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ..extras import needs

with needs("web", "barbu_env.web.server"):  # one line if the extra is missing
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from pydantic import BaseModel, ConfigDict, Field

from ..actions import AGENTS, NUM_ACTIONS, mask_array
from ..agents import Agent, agent_names, make_agent
from ..cards import SUIT_MASK, cards_of
from ..constants import CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS, Phase, Refusal
from ..engine import BarbuState, HandResult
from ..human import action_said, hand_summary, seat_labels
from ..records import GameRecord, RecordError, printable, replay_record
from ..refusals import refusal_text
from ..rules import Rules, RulesError, load_rules, preset_names
from ..table import TableView, choice_text, contract_label, record_steps, state_view, trick_winner

STATIC = Path(__file__).resolve().parent / "static"
#: Games and replays kept at once; the least recently used is dropped past this.
MAX_GAMES = 64
MAX_REPLAYS = 32
#: The largest record the replay viewer accepts (a whole game's record is about 25 kB).
MAX_RECORD_BYTES = 2_000_000
#: A replay's answer is at most this many times the size of the record uploaded (a whole
#: game's is about 11 times; the labels are sent once, so long names add their size once).
REPLAY_FACTOR = 32
#: The replays' answers kept at once, in bytes together (the oldest dropped past this).
MAX_REPLAY_BYTES = 64_000_000
#: The longest agent name or preset name a request may hold.
MAX_NAME = 200
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


def _short(value: Any, width: int = 40) -> str:
    """``value`` as JSON text (``NaN`` and all), cut to ``width`` characters."""
    try:
        text = json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def validation_detail(errors: Sequence[dict[str, Any]]) -> str:
    """Pydantic's errors as one line: each field, what is wrong, what was sent."""
    parts = []
    for error in errors[:5]:
        where = ".".join(printable(p) for p in error.get("loc", ()) if p != "body") or "body"
        got = f" (got {_short(error['input'])})" if error.get("type") != "missing" and "input" in error else ""
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


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 as soon as the
    bytes received pass the limit (a ``Content-Length`` over it: before any is read), never
    read further; a body within it is passed on whole."""

    def __init__(self, app: Any, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        size = dict(scope["headers"]).get(b"content-length")
        if size is not None and (not size.isdigit() or int(size) > self.limit):
            await self._refuse(send)
            return
        chunks, received, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> dict:
            nonlocal first
            if first is not None:
                message, first = first, None
                return message
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": f"request body over {self.limit} bytes"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers + [(b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


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
    (``barbu_env.refusals.refusal_text``); ``code``: the kernels' reason, when the caller
    has the game state (``BarbuState.refusal``), else read from the view."""
    return refusal_text(view, action, code)


# ---------------------------------------------------------------------- the app


class _Store(OrderedDict):
    """Games or replays by id, the least recently used dropped past ``limit`` items or, with
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
                raise HTTPException(404, f"no {what} {item_id!r} (it may have expired: start a new one)")
            self.move_to_end(item_id)
            return self[item_id]


def create_app(specs: Sequence[str], rules: Rules | str | dict | None = None, seed: int | None = None) -> FastAPI:
    """The app for a table of four seats, ``specs`` (exactly one ``"human"``, the others
    agent names or checkpoint paths), under ``rules``; games are seeded from ``seed``."""
    specs = list(specs)
    if len(specs) != NUM_PLAYERS or specs.count(HUMAN) != 1:
        raise ValueError(f"a table is {NUM_PLAYERS} seats with exactly one 'human', not {specs}")
    default_rules = load_rules(rules)
    human = specs.index(HUMAN)
    for spec in specs:  # an unknown name or a missing file fails now, not at the first game
        if spec != HUMAN:
            make_agent(spec, seed=0, rules=default_rules)
    opponents = [specs[(human + k) % NUM_PLAYERS] for k in range(1, NUM_PLAYERS)]  # left, opposite, right
    # Opponents a browser may choose: the registered names and the specs given here (never
    # other paths: a request does not load files).
    allowed = {**{name: name for name in agent_names()}, **{label: s for label, s in zip(seat_labels(specs), specs)}}
    allowed.pop(HUMAN, None)
    seeds = np.random.SeedSequence(seed)
    games, replays = _Store(MAX_GAMES), _Store(MAX_REPLAYS, MAX_REPLAY_BYTES)
    app = FastAPI(title="Barbu", docs_url=None, redoc_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(BodyLimit, limit=MAX_RECORD_BYTES)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_detail(exc.errors())}, status_code=422)

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
            "presets": preset_names(),
            "hands": NUM_HANDS,
        }

    @app.post("/api/games", status_code=201)
    def new_game(request: NewGame | None = None) -> dict[str, Any]:
        request = request or NewGame()
        chosen = request.opponents or seat_labels(opponents)
        unknown = [name for name in chosen if name not in allowed]
        if unknown:
            raise HTTPException(422, f"unknown opponent(s) {unknown}; choose among {sorted(allowed)}")
        if request.rules is not None and request.rules not in preset_names():
            raise HTTPException(422, f"unknown rules preset {request.rules!r}; presets: {preset_names()}")
        game_rules = load_rules(request.rules) if request.rules is not None else default_rules
        child = np.random.SeedSequence(request.seed) if request.seed is not None else seeds.spawn(1)[0]
        game_seed, *agent_seeds = child.spawn(NUM_PLAYERS + 1)
        seat_specs = list(specs)
        for k, name in enumerate(chosen, start=1):
            seat_specs[(human + k) % NUM_PLAYERS] = allowed[name]
        agents: list[Agent | None] = [
            None if p == human else make_agent(seat_specs[p], seed=int(s.generate_state(1)[0]), rules=game_rules)
            for p, s in zip(range(NUM_PLAYERS), agent_seeds)
        ]
        labels = ["you" if p == human else seat_labels([seat_specs[p]])[0] for p in range(NUM_PLAYERS)]
        state = BarbuState.new_game(game_rules, np.random.default_rng(game_seed))
        game = Game(secrets.token_hex(8), state, agents, labels, human, request.hands)
        with game.lock:
            game.advance()
        games.add(game.id, game)
        return game.view()

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str) -> dict[str, Any]:
        game = games.find(game_id, "game")
        with game.lock:
            return game.view()

    @app.post("/api/games/{game_id}/actions")
    def act(game_id: str, request: Action) -> dict[str, Any]:
        game = games.find(game_id, "game")
        with game.lock:
            if game.over:
                raise HTTPException(409, "the game is over: start a new one")
            state = game.state
            if state.current_player != game.human:  # the agents always play on to the person's turn
                raise HTTPException(409, f"it is P{state.current_player}'s turn, not yours")
            if not (state.legal_mask() >> request.action) & 1:
                view = state_view(state, game.human)
                raise HTTPException(422, f"not allowed: {refusal(view, request.action, state.refusal(request.action))}")
            game.apply(request.action)
            return game.view()

    @app.get("/api/games/{game_id}/record")
    def record(game_id: str) -> JSONResponse:
        game = games.find(game_id, "game")
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


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run ``app`` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = [
    "MAX_GAMES",
    "MAX_RECORD_BYTES",
    "MAX_REPLAYS",
    "MAX_REPLAY_BYTES",
    "REPLAY_FACTOR",
    "BodyLimit",
    "create_app",
    "refusal",
    "serve",
    "strict_json",
    "validation_detail",
    "view_json",
]
