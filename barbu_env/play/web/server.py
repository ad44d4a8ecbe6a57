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

A bad request is a 4xx with a one-line ``detail``: pydantic's strict models refuse what is
not an integer in its range (``true``, ``"3"``, ``3.0``, ``NaN``) with a 422 naming the
field, and JSON that does not parse is a 400 or 422. A body over ``MAX_RECORD_BYTES`` for
a record, ``MAX_REQUEST_BYTES`` for anything else, is refused with a 413 (FastAPI's
``max_body_size``). A replay's answer sends the seat labels once (the steps carry none);
the replays kept hold at most ``MAX_REPLAY_BYTES`` of answers together. What a client may
hold (games, searches, connections, time) is ``barbu_env.play.web.limits``'; a search agent
(``SEARCH_AGENTS``) chosen in the browser plays with a per-move budget (``BROWSER_BUDGETS``).

A table ("view") is a JSON object: seats are absolute (0-3), cards are ids 0-51
(``suit * 13 + rank``), actions are ids 0-84 with their text (``barbu_env.view.table.choice_text``).
The person's view is read from their observation, so it holds only what their seat may know.
This module is the requests and their routes; the games and replays it keeps, and the
tables as JSON, are ``barbu_env.play.web.games``'.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import reprlib
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ...util.extras import needs

with needs("web", "barbu_env.play.web.server"):  # one line if the extra is missing
    from fastapi import Body, FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .games import Game, Games, Replays, view_json
    from .limits import MAX_RECORD_BYTES, MAX_REQUEST_BYTES, Limits, Protocol

from ...agents import Agent, AgentSpec, agent_names, make_agent
from ...evaluation.records import GameRecord, RecordError, replay_record
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
#: The replays' answers kept at once, in bytes together (the oldest dropped past this).
MAX_REPLAY_BYTES = 64_000_000
#: The longest agent name or preset name a request may hold.
MAX_NAME = 200
#: The longest ``detail`` of any refusal.
MAX_DETAIL = 600
#: Agents that search at each move, whose cost a browser's choice must not leave open: a
#: game seating one takes a search slot (``Limits.searches``) for each request that plays.
SEARCH_AGENTS = frozenset({"openspiel-ismcts", "pimc", "pimc-ppo"})
#: The per-move budget of a search agent a browser chooses by its registered name (about
#: 0.2 s of CPU per move for ``openspiel-ismcts`` where its default 1,000 simulations take
#: 1-2 s); a table's own agents (``--agents``) play as their specs say.
BROWSER_BUDGETS: dict[str, dict[str, Any]] = {"openspiel-ismcts": {"simulations": 200}}
HUMAN = "human"


# ---------------------------------------------------------------------- requests


Name = Annotated[str, Field(max_length=MAX_NAME)]


class NewGame(BaseModel):
    """A new game: the three opponents (left, opposite, right of the person), the number of
    hands, a rules preset and a seed; each optional. Strict: no value is converted."""

    model_config = ConfigDict(extra="forbid", strict=True)
    opponents: list[Name] | None = Field(default=None, min_length=NUM_PLAYERS - 1, max_length=NUM_PLAYERS - 1)
    hands: int = Field(default=NUM_HANDS, ge=1, le=NUM_HANDS)
    rules: Name | None = None
    seed: int | None = Field(default=None, ge=0, lt=2**63)


class Action(BaseModel):
    """The person's action: an id 0-84. Strict: no value is converted."""

    model_config = ConfigDict(extra="forbid", strict=True)
    action: int = Field(ge=0, lt=NUM_ACTIONS)


def validation_detail(errors: Sequence[dict[str, Any]]) -> str:
    """Pydantic's errors as one line: each field (its first 40 characters) and what is wrong with it."""
    fields = [(".".join(map(str, e.get("loc", ())[1:]))[:40] or "body", e.get("msg", "invalid")) for e in errors]
    return "invalid request: " + "; ".join(f"{where}: {msg}" for where, msg in fields)


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
    app = FastAPI(title="Barbu", docs_url=None, redoc_url=None, max_body_size=limits.request_bytes)
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

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = " ".join(str(exc.detail).split())[:MAX_DETAIL]
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return await refused(request, HTTPException(422, validation_detail(exc.errors())))

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
        request: NewGame | None = None,
        http: Request = None,  # type: ignore[assignment]  # FastAPI passes the request; None when called directly
    ) -> dict[str, Any]:
        request = request or NewGame()
        chosen = request.opponents or default_opponents
        unknown = [reprlib.repr(name) for name in chosen if name not in allowed]
        if unknown:
            raise HTTPException(422, f"unknown opponent(s) {', '.join(unknown)}; choose among {sorted(allowed)}")
        if request.rules is not None and request.rules not in preset_names():
            raise HTTPException(422, f"unknown rules preset {reprlib.repr(request.rules)}; presets: {preset_names()}")
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
    def act(game_id: str, request: Action) -> dict[str, Any]:
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

    @app.post("/api/replays", status_code=201, max_body_size=limits.record_bytes)
    def new_replay(data: Annotated[Any, Body()]) -> Response:
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


def _with_budget(name: str) -> str:
    """The spec a browser's choice of the registered agent ``name`` is built from: the
    name, with its per-move budget if it is a search agent that has one."""
    spec = AgentSpec.parse(name)
    for key, value in BROWSER_BUDGETS.get(name, {}).items():
        spec = spec.with_param(key, value)
    return str(spec)


def _searches(spec: str) -> bool:
    """Whether an agent spec names a search agent (``SEARCH_AGENTS``)."""
    return AgentSpec.parse(spec).name in SEARCH_AGENTS


def uvicorn_config(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> Any:
    """uvicorn's ``Config`` for ``app`` under its limits (``app.state.limits``,
    ``barbu_env.play.web.limits``), no websockets, the client's own address (no proxy headers)."""
    import uvicorn

    limits: Limits = app.state.limits
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=type("Protocol", (Protocol,), {"limits": limits}),
        ws="none",
        proxy_headers=False,
        limit_concurrency=limits.connections,
        timeout_keep_alive=limits.keep_alive,
        backlog=limits.backlog,
        h11_max_incomplete_event_size=limits.head_bytes,
    )


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, sock: Any = None) -> None:
    """Run ``app`` with uvicorn (``uvicorn_config``) until interrupted, on ``host:port`` or
    on the bound socket ``sock``."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port)).run(sockets=[sock] if sock is not None else None)


__all__ = [
    "BROWSER_BUDGETS",
    "MAX_DETAIL",
    "MAX_RECORD_BYTES",
    "MAX_REQUEST_BYTES",
    "MAX_REPLAYS",
    "MAX_REPLAY_BYTES",
    "SEARCH_AGENTS",
    "create_app",
    "refusal",
    "serve",
    "uvicorn_config",
    "validation_detail",
    "view_json",
]
