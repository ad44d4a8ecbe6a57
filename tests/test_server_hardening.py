"""The server (``barbu serve``) under bad requests: every one is a 4xx with a one-line
reason, never a 5xx, whatever the JSON (NaN, Infinity, booleans or strings for numbers,
integers beyond 64 bits, deep nesting); a body over the limit is refused as its bytes
arrive, declared length or not; a replay's answer is bounded by the record's size.

Requests go through the ASGI app in-process (``asgi`` below: Starlette's TestClient needs
the ``httpx2`` package, which the project does not depend on), and, for the chunked upload,
over real HTTP to uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_server import serving  # noqa: E402

from barbu_env.evaluation.records import GameRecord  # noqa: E402
from barbu_env.game.engine import BarbuState  # noqa: E402
from barbu_env.play.web.server import MAX_DETAIL, MAX_RECORD_BYTES, REPLAY_FACTOR, create_app  # noqa: E402


@dataclass
class Answer:
    status: int
    body: bytes
    chunks_read: int  # how many body messages the app took from the client

    def json(self):
        return json.loads(self.body)


def asgi(
    app, method: str, path: str, body: bytes | None = None, chunks: list[bytes] | None = None, client: str = "127.0.0.1"
) -> Answer:
    """One request through the ASGI app from the address ``client``: ``body`` whole (with
    its Content-Length), or ``chunks`` one message each without a length (as a chunked
    upload arrives)."""
    headers = [(b"host", b"127.0.0.1")]
    if body is not None:
        chunks = [body]
        headers.append((b"content-length", str(len(body)).encode()))
    chunks = chunks if chunks is not None else [b""]
    headers.append((b"content-type", b"application/json"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": (client, 50000),
        "server": ("127.0.0.1", 8000),
    }
    pending = list(chunks)
    out = {"status": None, "body": b"", "read": 0}

    async def receive():
        if pending:
            out["read"] += 1
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
        await asyncio.sleep(60)  # no disconnect while the app answers
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
        elif message["type"] == "http.response.body":
            out["body"] += message.get("body", b"")

    try:
        asyncio.run(app(scope, receive, send))
    except Exception:  # Starlette sends its 500, then raises the error again
        if out["status"] is None:
            out["status"] = 500
    return Answer(out["status"], out["body"], out["read"])


@pytest.fixture(scope="module")
def app():
    return create_app(["human", "random", "random", "random"], seed=0)


def finished_game(hands: int = 2, seed: int = 5) -> BarbuState:
    state = BarbuState.new_game(rng=np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    while len(state.results) < hands and not state.is_terminal:
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    return state


@pytest.fixture(scope="module")
def record() -> dict:
    return GameRecord.from_state(finished_game(), agents=["a", "b", "c", "d"]).to_dict()


@pytest.fixture(scope="module")
def game_id(app) -> str:
    answer = asgi(app, "POST", "/api/games", json.dumps({"hands": 1, "seed": 1}).encode())
    assert answer.status == 201
    return answer.json()["game"]


def with_rules(record: dict, **changes) -> bytes:
    return json.dumps(dict(record, rules=dict(record["rules"], **changes))).encode()


def with_field(record: dict, key: str, value) -> bytes:
    return json.dumps(dict(record, **{key: value})).encode()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# (method, path ({game} is a live game), body, expected status, a word the reason holds)
BAD_REQUESTS = {
    "hands NaN": ("POST", "/api/games", b'{"hands": NaN}', 422, "hands"),
    "hands Infinity": ("POST", "/api/games", b'{"hands": Infinity}', 422, "hands"),
    "hands -Infinity": ("POST", "/api/games", b'{"hands": -Infinity}', 422, "hands"),
    "hands 1e400": ("POST", "/api/games", b'{"hands": 1e400}', 422, "hands"),
    "hands true": ("POST", "/api/games", b'{"hands": true}', 422, "hands"),
    "hands string": ("POST", "/api/games", b'{"hands": "3"}', 422, "hands"),
    "hands float": ("POST", "/api/games", b'{"hands": 3.0}', 422, "hands"),
    "hands 2**70": ("POST", "/api/games", b'{"hands": %d}' % 2**70, 422, "hands"),
    "hands 5000 digits": ("POST", "/api/games", b'{"hands": 1' + b"0" * 5000 + b"}", 422, "hands: an integer of 5001"),
    "seed 4301 digits": ("POST", "/api/games", b'{"seed": 1' + b"0" * 4300 + b"}", 422, "seed: an integer of 4301"),
    "action 5000 digits": ("POST", "/api/games/{game}/actions", b'{"action": -' + b"9" * 5000 + b"}", 422, "action"),
    "seed NaN": ("POST", "/api/games", b'{"seed": NaN}', 422, "seed"),
    "seed string": ("POST", "/api/games", b'{"seed": "3"}', 422, "seed"),
    "seed false": ("POST", "/api/games", b'{"seed": false}', 422, "seed"),
    "seed 2**64": ("POST", "/api/games", b'{"seed": %d}' % 2**64, 422, "seed"),
    "opponents NaN": ("POST", "/api/games", b'{"opponents": [NaN, 1, true]}', 422, "opponents"),
    "opponent name huge": (
        "POST",
        "/api/games",
        json.dumps({"opponents": ["r" * 4000] * 3}).encode(),
        422,
        "opponents",
    ),
    "rules number": ("POST", "/api/games", b'{"rules": 5}', 422, "rules"),
    "rules Infinity": ("POST", "/api/games", b'{"rules": Infinity}', 422, "rules"),
    "game body nested": ("POST", "/api/games", nested(5_000), 422, "nested too deeply"),
    "game body not UTF-8": ("POST", "/api/games", b'{"seed": "\xff"}', 422, "not UTF-8"),
    "game body not JSON": ("POST", "/api/games", b'{"seed": ', 422, "not JSON"),
    "game body a list": ("POST", "/api/games", b"[1, 2]", 422, "body"),
    "game body over 16 kB": ("POST", "/api/games", b" " * 20_000, 413, "16384"),
    "huge key": ("POST", "/api/games", json.dumps({"k" * 10_000: 1}).encode(), 422, "kkk..."),
    "action nested": ("POST", "/api/games/{game}/actions", nested(5_000), 422, "nested too deeply"),
    "action not UTF-8": ("POST", "/api/games/{game}/actions", b'{"action": "\xfe"}', 422, "not UTF-8"),
    "action NaN": ("POST", "/api/games/{game}/actions", b'{"action": NaN}', 422, "action"),
    "action Infinity": ("POST", "/api/games/{game}/actions", b'{"action": Infinity}', 422, "action"),
    "action true": ("POST", "/api/games/{game}/actions", b'{"action": true}', 422, "action"),
    "action string": ("POST", "/api/games/{game}/actions", b'{"action": "3"}', 422, "action"),
    "action 2**70": ("POST", "/api/games/{game}/actions", b'{"action": %d}' % 2**70, 422, "action"),
    "record NaN": ("POST", "/api/replays", b'{"format": NaN}', 422, "NaN"),
    "record nested": ("POST", "/api/replays", nested(100_000), 422, "nested"),
    "record not UTF-8": ("POST", "/api/replays", b'{"format": "\xff\xfe"}', 422, "UTF-8"),
    "record rule 2**70": ("POST", "/api/replays", lambda r: with_rules(r, barbu_points=2**70), 422, "64 bits"),
    "record rule 10**400": ("POST", "/api/replays", lambda r: with_rules(r, trumps_points=10**400), 422, "64 bits"),
    "record rule 2**63": ("POST", "/api/replays", lambda r: with_rules(r, min_declarer_doubles=2**63), 422, "64 bits"),
    "record rule 2**62": ("POST", "/api/replays", lambda r: with_rules(r, barbu_points=2**62), 422, "barbu_points"),
    "record rule NaN": ("POST", "/api/replays", lambda r: with_rules(r, barbu_points=float("nan")), 422, "NaN"),
    "record rule list huge": (
        "POST",
        "/api/replays",
        lambda r: with_rules(r, no_last_two_points=[2**66, 1]),
        422,
        "64 bits",
    ),
    "record deal 0.9 MB": ("POST", "/api/replays", lambda r: with_field(r, "deals", [["x" * 900_000]]), 422, "deal"),
    "record declarer 2**64": ("POST", "/api/replays", lambda r: with_field(r, "first_declarer", 2**64), 422, "64 bits"),
    "record action 2**80": ("POST", "/api/replays", lambda r: with_field(r, "actions", [2**80]), 422, "64 bits"),
    "record scores Infinity": (
        "POST",
        "/api/replays",
        lambda r: with_field(r, "final_scores", [float("inf")] * 4),
        422,
        "Infinity",
    ),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_a_bad_request_is_a_4xx_with_its_reason(app, record, game_id, name):
    method, path, body, status, word = BAD_REQUESTS[name]
    body = body(record) if callable(body) else body
    answer = asgi(app, method, path.format(game=game_id), body)
    assert answer.status == status, (answer.status, answer.body[:300])
    detail = answer.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and word in detail, detail
    assert len(detail) <= MAX_DETAIL


def test_strict_requests_still_take_what_they_should(app, game_id):
    answer = asgi(app, "POST", "/api/games", b'{"hands": 2, "seed": 9223372036854775807, "rules": "standard"}')
    assert answer.status == 201 and answer.json()["hands_to_play"] == 2
    assert asgi(app, "POST", "/api/games", b"").status == 201  # no body: every default
    view = asgi(app, "GET", f"/api/games/{game_id}").json()
    action = view["legal"][0]["id"] if view["legal"] else 0
    assert asgi(app, "POST", f"/api/games/{game_id}/actions", b'{"action": %d}' % action).status == 200


# ---------------------------------------------------------------------- the body limit


def test_a_body_without_length_is_refused_once_past_the_limit_and_not_read_further(app):
    chunk = b" " * 65_536
    chunks = [b'{"format": "'] + [chunk] * 200  # 13 MB, no Content-Length
    answer = asgi(app, "POST", "/api/replays", chunks=chunks)
    assert answer.status == 413 and str(MAX_RECORD_BYTES) in answer.json()["detail"]
    assert answer.chunks_read <= MAX_RECORD_BYTES // len(chunk) + 2  # the rest never taken
    small = asgi(app, "POST", "/api/games", chunks=[b'{"hands"', b": 1}"])  # within it: passed on whole
    assert small.status == 201


@pytest.fixture(scope="module")
def live_server():
    """The app under uvicorn on a free port of 127.0.0.1, in a thread; yields the port."""
    with serving(create_app(["human", "random", "random", "random"])) as port:
        yield port


def test_a_chunked_upload_over_the_limit_is_refused_over_http(live_server):
    """A chunked body of 24 MB: the server answers 413 once 2 MB have arrived, and the client
    never gets to send the rest (on the old server it was read whole, then refused as JSON)."""
    total, chunk = 24_000_000, b"a" * 65_536
    conn = socket.create_connection(("127.0.0.1", live_server), timeout=20)
    deadline = time.monotonic() + 30
    sent, reply = 0, b""
    try:
        head = b"POST /api/replays HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + b'%x\r\n{"format": "\r\n' % 12)
        while sent < total and time.monotonic() < deadline:
            if select.select([conn], [], [], 0)[0]:
                break  # the server has answered
            try:
                conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        else:
            conn.sendall(b"0\r\n\r\n")
        while b"\r\n\r\n" not in reply and time.monotonic() < deadline:
            try:
                data = conn.recv(65_536)
            except ConnectionResetError:
                break
            if not data:
                break
            reply += data
    finally:
        conn.close()
    status = reply.split(b" ", 2)[1] if reply.startswith(b"HTTP/1.1 ") else reply[:80]
    assert status == b"413", f"status {status!r} after sending {sent} bytes"
    assert sent < total, "the whole oversized body was read"


# ---------------------------------------------------------------------- the replay's answer


def replay_uploads() -> dict[str, bytes]:
    """Records of every shape, to bound the answer by the upload: a whole game as
    ``GameRecord.to_json`` writes it and as compact JSON, long and non-ASCII names, and a
    hand cut off after its twelfth trick (the smallest upload per step)."""
    game = GameRecord.from_state(finished_game(hands=28, seed=2), agents=["heuristic", "random", "ppo", "pimc"])
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    partial = finished_game(hands=0, seed=3)
    while sum(partial.tricks_won) < 12 or partial.phase.name != "TRICKS" or partial.trick_size:
        partial.apply_action(partial.legal_actions()[0])
    short = GameRecord.from_state(partial, agents=["a", "b", "c", "d"]).to_dict() | {"metadata": {}}
    long_names = dict(game.to_dict(), agents=[f"{k}" + "x" * 100_000 for k in range(4)])
    return {
        "whole game": game.to_json().encode(),
        "whole game compact": json.dumps(game.to_dict(), **compact).encode(),
        "long names": json.dumps(long_names, **compact).encode(),
        "non-ASCII names": json.dumps(dict(game.to_dict(), agents=["🂡" * 50] * 4), **compact).encode(),
        "twelve tricks": json.dumps({k: v for k, v in short.items() if k != "agents"}, **compact).encode(),
    }


@pytest.mark.parametrize("shape", list(replay_uploads()))
def test_a_replays_answer_is_bounded_by_the_record_uploaded(app, shape):
    upload = replay_uploads()[shape]
    answer = asgi(app, "POST", "/api/replays", upload)
    assert answer.status == 201, answer.body[:300]
    replay = answer.json()
    assert replay["steps"] and all("labels" not in step for step in replay["steps"])  # sent once
    assert len(replay["labels"]) == 4
    assert len(answer.body) <= REPLAY_FACTOR * len(upload), f"{len(answer.body) / len(upload):.1f} times"
    again = asgi(app, "GET", f"/api/replays/{replay['id']}")
    assert again.status == 200 and again.body == answer.body


# ---------------------------------------------------------------------- any JSON at all

TEXT = st.text(max_size=12) | st.sampled_from(["\n", "a\nb", "\x1b[2J", "QH\n"])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def request_body(fields: list[str]):
    """A body of some of ``fields`` (and sometimes another key), each any JSON; or any JSON at all."""
    keys = st.sampled_from([*fields, "other"])
    return st.one_of(st.dictionaries(keys, JSON, max_size=len(fields) + 1), JSON)


def assert_4xx_or_ok(answer: Answer) -> None:
    assert answer.status < 500, (answer.status, answer.body[:300])
    if answer.status >= 400:
        detail = answer.json()["detail"]
        assert isinstance(detail, str) and detail and "\n" not in detail, detail


FAST = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FAST
@given(body=request_body(["opponents", "hands", "rules", "seed"]))
def test_any_json_for_a_new_game_is_never_a_5xx(app, body):
    answer = asgi(app, "POST", "/api/games", json.dumps(body).encode())
    assert_4xx_or_ok(answer)
    if answer.status == 201:  # only well-typed values get through (null: every default)
        body = body if body is not None else {}
        assert (
            isinstance(body, dict)
            and type(body.get("hands", 1)) is int
            and type(body.get("seed", 1)) in (int, None.__class__)
        )


@FAST
@given(body=request_body(["action"]))
def test_any_json_for_an_action_is_never_a_5xx(app, game_id, body):
    answer = asgi(app, "POST", f"/api/games/{game_id}/actions", json.dumps(body).encode())
    assert_4xx_or_ok(answer)


RECORD_FIELDS = ["format", "version", "rules", "first_declarer", "agents", "metadata", "final_scores", "deals"]
RULES = list(GameRecord.from_state(BarbuState.new_game(rng=np.random.default_rng(0))).rules)


@FAST
@given(
    where=st.sampled_from(["record", "rules"]),
    key=st.sampled_from(RECORD_FIELDS + ["actions", "hands"] + RULES),
    value=JSON | st.integers(min_value=2**62, max_value=2**80) | st.lists(st.integers(), min_size=2, max_size=4),
)
def test_any_json_in_a_record_is_never_a_5xx(app, record, where, key, value):
    edited = dict(record, **{key: value})
    if where == "rules":
        edited = dict(record, rules=dict(record["rules"], **{key: value}))
    assert_4xx_or_ok(asgi(app, "POST", "/api/replays", json.dumps(edited).encode()))
