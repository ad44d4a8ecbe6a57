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
This module is the requests and their routes; the games and replays it keeps, and the
tables as JSON, are ``barbu_env.play.web.games``'.
"""

from __future__ import annotations

import hashlib
import json
import math
import mimetypes
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ...util.extras import needs

with needs("web", "barbu_env.play.web.server"):  # one line if the extra is missing
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field, ValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .games import QUOTE, Game, Games, Replays, cut, view_json
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
from ...game.actions import NUM_ACTIONS
from ...game.constants import NUM_HANDS, NUM_PLAYERS, Refusal
from ...game.engine import BarbuState
from ...game.rules import Rules, RulesError, load_rules, preset_names
from ...view.refusals import refusal_text
from ...view.table import TableView, record_steps, state_view
from ..terminal import seat_labels

STATIC = Path(__file__).resolve().parent / "static"


def static_pages() -> dict[str, tuple[bytes, str, str]]:
    """The page's files (``static/``, about 20 kB), read once: name -> (bytes, media type,
    ETag). Served from memory, an answer that waits on a slow client holds no open file."""
    pages = {}
    for path in sorted(STATIC.iterdir()):
        if path.is_file():
            data = path.read_bytes()
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            kind += "; charset=utf-8" if kind.startswith("text/") else ""
            pages[path.name] = (data, kind, '"' + hashlib.sha256(data).hexdigest()[:32] + '"')
    return pages


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


def _short(value: Any, width: int = QUOTE) -> str:
    """``value`` as JSON text (``NaN`` and all), cut to ``width`` characters."""
    try:
        text = json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value) if not isinstance(value, (list, dict)) else f"<a {type(value).__name__}>"
    return cut(text, width)


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
        where = ".".join(cut(printable(p)) for p in error.get("loc", ()) if p != "body") or "body"
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


def refusal(view: TableView, action: int, code: Refusal | None = None) -> str:
    """Why ``action`` is not legal for the viewer, in words, and what it may do instead
    (``barbu_env.view.refusals.refusal_text``); ``code``: the kernels' reason, when the caller
    has the game state (``BarbuState.refusal``), else read from the view."""
    return refusal_text(view, action, code)


# ---------------------------------------------------------------------- the app


def create_app(
    specs: Sequence[str],
    rules: Rules | str | dict | None = None,
    seed: int | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """The app for a table of four seats, ``specs`` (exactly one ``"human"``, the others
    agent names or checkpoint paths), under ``rules``; games are seeded from ``seed``;
    ``limits`` bound what a client may hold (``barbu_env.play.web.limits``; ``serve`` reads them
    from ``app.state.limits``; ``app.state.games`` is the table's ``Games``)."""
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
    label_of = dict(zip(specs, seat_labels(specs)))  # the table's specs named apart, once
    allowed.update((label_of[spec], spec) for spec in specs)
    allowed.pop(HUMAN, None)
    default_opponents = [label_of[spec] for spec in opponents]
    seeds = np.random.SeedSequence(seed)
    games, replays = Games(limits), Replays(MAX_REPLAYS, MAX_REPLAY_BYTES)
    search_slots = threading.BoundedSemaphore(limits.searches)
    app = FastAPI(title="Barbu", docs_url=None, redoc_url=None)
    app.state.limits, app.state.search_slots, app.state.games = limits, search_slots, games
    pages = static_pages()

    def page(name: str, request: Request) -> Response:
        if name not in pages:
            raise HTTPException(404, "no such file")
        data, kind, etag = pages[name]
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        asked = [tag.strip().removeprefix("W/") for tag in request.headers.get("if-none-match", "").split(",")]
        if "*" in asked or etag in asked:  # the browser's copy is this one
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=kind, headers=headers)

    app.add_middleware(BodyLimit, limits=limits, large_paths=frozenset({"/api/replays"}))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_detail(exc.errors())}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = cut(" ".join(str(exc.detail).split()), MAX_DETAIL)
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

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def table_page(request: Request) -> Response:
        return page("index.html", request)

    @app.api_route("/replay", methods=["GET", "HEAD"], include_in_schema=False)
    def replay_page(request: Request) -> Response:
        return page("replay.html", request)

    @app.api_route("/static/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def static_file(name: str, request: Request) -> Response:
        return page(name, request)

    @app.get("/api/setup")
    def setup() -> dict[str, Any]:
        return {
            "human_seat": human,
            "opponents": default_opponents,
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
        chosen = request.opponents or default_opponents
        unknown = [cut(printable(name)) for name in chosen if name not in allowed]
        if unknown:
            raise HTTPException(422, f"unknown opponent(s) {unknown}; choose among {sorted(allowed)}")
        if request.rules is not None and request.rules not in preset_names():
            raise HTTPException(
                422, f"unknown rules preset {cut(printable(request.rules))!r}; presets: {preset_names()}"
            )
        owner = http.client.host if http is not None and http.client is not None else "local"
        seat_specs, labels = list(specs), ["you"] * NUM_PLAYERS
        for k, name in enumerate(chosen, start=1):
            seat_specs[(human + k) % NUM_PLAYERS] = allowed[name]
            spec = allowed[name]  # a table's spec named as in the table, a registered one with its budget
            labels[(human + k) % NUM_PLAYERS] = label_of[spec] if spec in label_of else seat_labels([spec])[0]
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
