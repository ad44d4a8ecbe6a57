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
                                          201 and its steps, trick by trick, every hand shown
``GET /api/replays/{id}``                 those steps again
========================================  ===================================================

A table ("view") is a JSON object: seats are absolute (0-3), cards are ids 0-51
(``suit * 13 + rank``), actions are ids 0-84 with their text (``barbu_env.table.choice_text``).
The person's view is read from their observation, so it holds only what their seat may know.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import Body, FastAPI, HTTPException
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from ..actions import AGENTS, NUM_ACTIONS, mask_array
from ..agents import Agent, agent_names, make_agent
from ..cards import NUM_CARDS, SUIT_MASK, card_text, cards_of
from ..constants import CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS, Phase
from ..engine import BarbuState, HandResult
from ..human import ChoiceError, action_said, hand_summary, parse_choice, seat_labels
from ..records import GameRecord, RecordError, replay_record
from ..rules import Rules, load_rules, preset_names
from ..table import TableView, choice_text, contract_label, record_steps, state_view, trick_winner

STATIC = Path(__file__).resolve().parent / "static"
#: Games and replays kept at once; the least recently used is dropped past this.
MAX_GAMES = 64
MAX_REPLAYS = 32
#: The largest record the replay viewer accepts (a whole game's record is about 25 kB).
MAX_RECORD_BYTES = 2_000_000
HUMAN = "human"


# ---------------------------------------------------------------------- requests


class NewGame(BaseModel):
    """A new game: the three opponents (left, opposite, right of the person), the number of
    hands, a rules preset and a seed; each optional."""

    model_config = ConfigDict(extra="forbid")
    opponents: list[str] | None = Field(default=None, min_length=NUM_PLAYERS - 1, max_length=NUM_PLAYERS - 1)
    hands: int = Field(default=NUM_HANDS, ge=1, le=NUM_HANDS)
    rules: str | None = None
    seed: int | None = Field(default=None, ge=0, lt=2**63)


class Action(BaseModel):
    """The person's action: an id 0-84."""

    model_config = ConfigDict(extra="forbid")
    action: int = Field(ge=0, lt=NUM_ACTIONS, strict=True)


# ---------------------------------------------------------------------- views as JSON


def view_json(view: TableView, labels: Sequence[str]) -> dict[str, Any]:
    """A ``TableView`` as plain JSON values (see the module docstring)."""
    return {
        "viewer": view.viewer,
        "labels": list(labels),
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


def refusal(view: TableView, action: int) -> str:
    """Why ``action`` is not legal for the viewer, in words."""
    if action < NUM_CARDS and view.phase in (Phase.TRICKS, Phase.DOMINO):
        try:
            parse_choice(view, card_text(action))
        except ChoiceError as e:
            return str(e)
    choices = ", ".join(choice_text(a) for a in view.legal)
    return f"{choice_text(action)} is not one of your choices now: {choices}"


# ---------------------------------------------------------------------- the app


class _Store(OrderedDict):
    """Games or replays by id, the least recently used dropped past ``limit``."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.lock = threading.Lock()

    def add(self, item_id: str, item: Any) -> None:
        with self.lock:
            self[item_id] = item
            while len(self) > self.limit:
                self.popitem(last=False)

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
    games, replays = _Store(MAX_GAMES), _Store(MAX_REPLAYS)
    app = FastAPI(title="Barbu", docs_url=None, redoc_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

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
                raise HTTPException(422, f"not allowed: {refusal(view, request.action)}")
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
    def new_replay(data: Any = Body(...)) -> dict[str, Any]:  # noqa: B008 (FastAPI's way to take any JSON body)
        try:
            rec = GameRecord.from_dict(data)
            replay_record(rec)  # the record must replay to its own results
            state = BarbuState.new_game(
                rec.rules_obj(), rng=np.random.default_rng(0), first_declarer=rec.first_declarer, deals=rec.deals
            )
        except (RecordError, ValueError) as e:
            raise HTTPException(422, f"not a valid game record: {e}") from None
        labels = rec.agents if len(rec.agents) == NUM_PLAYERS else [f"P{p}" for p in range(NUM_PLAYERS)]
        steps = [
            {**view_json(step.view, labels), "note": step.note, "winner": step.winner}
            for step in record_steps(state, rec.actions)
        ]
        replay = {"id": secrets.token_hex(8), "labels": labels, "final_scores": rec.final_scores, "steps": steps}
        replays.add(replay["id"], replay)
        return replay

    @app.get("/api/replays/{replay_id}")
    def get_replay(replay_id: str) -> dict[str, Any]:
        return replays.find(replay_id, "replay")

    @app.middleware("http")
    async def limit_body(request, call_next):  # a record larger than any game's is refused unread
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > MAX_RECORD_BYTES):
            return JSONResponse({"detail": f"request body over {MAX_RECORD_BYTES} bytes"}, status_code=413)
        return await call_next(request)

    return app


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run ``app`` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = ["MAX_GAMES", "MAX_REPLAYS", "create_app", "refusal", "serve", "view_json"]
