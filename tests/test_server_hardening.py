"""The server (``barbu serve``) under bad requests, over HTTP on 127.0.0.1: each one is a 4xx
with a one-line reason, never a 5xx, whatever the JSON; a body over its limit is refused
without being read; a replay's answer sends the seat names once."""

from __future__ import annotations

import http.client
import json
import select
import socket
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_server import serving  # noqa: E402

from barbu_env.evaluation.records import GameRecord  # noqa: E402
from barbu_env.game.engine import BarbuState  # noqa: E402
from barbu_env.play.web.server import MAX_DETAIL, create_app  # noqa: E402


def ask(port: int, method: str, path: str, body: bytes | None = None, source: str = "127.0.0.1") -> tuple[int, dict]:
    """One JSON request from ``source``: the status and the answer (text as ``{"detail": text}``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
    finally:
        conn.close()
    try:
        return answer.status, json.loads(data)
    except ValueError:
        return answer.status, {"detail": data.decode()}


@pytest.fixture(scope="module")
def port():
    with serving(create_app(["human", "random", "random", "random"], seed=0)) as port:
        yield port


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
def game_id(port) -> str:
    status, view = ask(port, "POST", "/api/games", b'{"hands": 1, "seed": 1}')
    assert status == 201
    return view["game"]


def with_rules(record: dict, **changes) -> bytes:
    return json.dumps(dict(record, rules=dict(record["rules"], **changes))).encode()


# (path ({game} is a live game), body, expected status, a word the reason holds)
BAD_REQUESTS = {
    "hands NaN": ("/api/games", b'{"hands": NaN}', 422, "hands"),
    "seed 2**70": ("/api/games", b'{"seed": %d}' % 2**70, 422, "seed"),
    "seed 5000 digits": ("/api/games", b'{"seed": 1' + b"0" * 5000 + b"}", 400, "parsing"),
    "opponent name huge": ("/api/games", json.dumps({"opponents": ["r" * 4000] * 3}).encode(), 422, "opponents"),
    "key huge, with a newline": ("/api/games", json.dumps({"k\n" * 5000: 1}).encode(), 422, "not permitted"),
    "nested": ("/api/games", b"[" * 5000 + b"]" * 5000, 400, "parsing"),
    "not UTF-8": ("/api/games", b'{"seed": "\xff"}', 400, "parsing"),
    "not JSON": ("/api/games", b'{"seed": ', 422, "JSON"),
    "a list": ("/api/games", b"[1, 2]", 422, "body"),
    "over 16 kB": ("/api/games", b" " * 20_000, 413, "Too Large"),
    "action NaN": ("/api/games/{game}/actions", b'{"action": NaN}', 422, "action"),
    "record nested": ("/api/replays", b"[" * 100_000 + b"]" * 100_000, 400, "parsing"),
    "record rule 2**70": ("/api/replays", lambda r: with_rules(r, barbu_points=2**70), 422, "barbu_points"),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_a_bad_request_is_a_4xx_with_a_one_line_reason(port, record, game_id, name):
    path, body, status, word = BAD_REQUESTS[name]
    got, answer = ask(port, "POST", path.format(game=game_id), body(record) if callable(body) else body)
    detail = answer["detail"]
    assert got == status and isinstance(detail, str) and "\n" not in detail and word in detail, (got, detail)
    assert len(detail) <= MAX_DETAIL


def test_good_requests_are_taken(port, game_id):
    assert ask(port, "POST", "/api/games", b'{"hands": 2, "seed": 9223372036854775807, "rules": "standard"}')[0] == 201
    assert ask(port, "POST", "/api/games", b"")[0] == 201  # no body: every default
    view = ask(port, "GET", f"/api/games/{game_id}")[1]
    assert ask(port, "POST", f"/api/games/{game_id}/actions", b'{"action": %d}' % view["legal"][0]["id"])[0] == 200


def test_an_announced_body_over_the_limit_is_refused_unread(port):
    """A record upload announcing 2.1 MB, sent only if the server asks for it (``Expect:
    100-continue``): the server answers 413 without asking."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", "/api/replays")
        conn.putheader("Content-Length", "2100000")
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()


def test_a_chunked_body_over_the_limit_is_refused_before_it_ends(port):
    """A chunked upload of 24 MB: answered 413 once past 2 MB; the client never sends the rest."""
    total, chunk, sent, reply = 24_000_000, b"a" * 65_536, 0, b""
    conn = socket.create_connection(("127.0.0.1", port), timeout=20)
    deadline = time.monotonic() + 30
    try:
        conn.sendall(b"POST /api/replays HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        while sent < total and not select.select([conn], [], [], 0)[0]:
            try:
                conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        while b"\r\n" not in reply and time.monotonic() < deadline and (data := conn.recv(65_536)):
            reply += data
    finally:
        conn.close()
    assert reply.startswith(b"HTTP/1.1 413") and sent < total, (reply[:80], sent)


def test_a_replay_sends_the_seat_names_once(port):
    game = GameRecord.from_state(finished_game(hands=4, seed=2), agents=["h", "r", "p", "q"]).to_dict()
    upload = json.dumps(dict(game, agents=[f"{k}" + "x" * 100_000 for k in range(4)])).encode()
    status, replay = ask(port, "POST", "/api/replays", upload)
    assert status == 201 and len(replay["labels"]) == 4 and replay["steps"]
    assert all("labels" not in step for step in replay["steps"])
    assert len(json.dumps(replay)) < 2 * len(upload)
    assert ask(port, "GET", f"/api/replays/{replay['id']}") == (200, replay)


# ---------------------------------------------------------------------- any JSON at all

TEXT = st.text(max_size=12) | st.sampled_from(["\n", "a\nb", "\x1b[2J"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-(2**80), 2**80) | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
FAST = settings(
    max_examples=25, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def assert_4xx_or_ok(status: int, answer: dict) -> None:
    assert status < 500, (status, answer)
    if status >= 400:
        assert isinstance(answer["detail"], str) and "\n" not in answer["detail"], answer


@FAST
@given(body=st.dictionaries(st.sampled_from(["opponents", "hands", "rules", "seed", "x"]), JSON) | JSON)
def test_any_json_for_a_new_game_or_an_action_is_never_a_5xx(port, game_id, body):
    data = json.dumps(body).encode()
    assert_4xx_or_ok(*ask(port, "POST", "/api/games", data))
    assert_4xx_or_ok(*ask(port, "POST", f"/api/games/{game_id}/actions", data))


RULES = list(GameRecord.from_state(BarbuState.new_game(rng=np.random.default_rng(0))).rules)


@FAST
@given(
    in_rules=st.booleans(),
    key=st.sampled_from(["format", "rules", "first_declarer", "agents", "final_scores", "deals", "actions", *RULES]),
    value=JSON | st.integers(2**62, 2**80) | st.lists(st.integers(), min_size=2, max_size=4),
)
def test_any_json_in_a_record_is_never_a_5xx(port, record, in_rules, key, value):
    edited = dict(record, rules=dict(record["rules"], **{key: value})) if in_rules else dict(record, **{key: value})
    assert_4xx_or_ok(*ask(port, "POST", "/api/replays", json.dumps(edited).encode()))
