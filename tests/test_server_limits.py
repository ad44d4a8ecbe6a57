"""What one client may hold of the server (``barbu serve``, ``barbu_env.play.web.limits``): a
client that sends no whole request, or reads none of its answers, is dropped within its
deadline while the server answers others; past the connection cap a new client is answered
and the connection waiting longest on its client gives way; each address keeps its own
share of games (429 past it, 503 once the table is full, nobody's game dropped); search
agents play within a cap on concurrent searches.

Real HTTP to uvicorn on 127.0.0.1 with small limits, so that each test takes a second or two."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_server import serving  # noqa: E402
from test_server_hardening import ask  # noqa: E402

from barbu_env.play.web import server  # noqa: E402
from barbu_env.play.web.limits import Limits  # noqa: E402
from barbu_env.play.web.server import create_app  # noqa: E402

TABLE = ["human", "random", "random", "random"]
FAST = Limits(client_timeout=0.5)


def connect(port: int, data: bytes = b"", receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.sendall(data)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> tuple[bytes, bool]:
    """What the server sends, and whether it closed the connection within ``seconds``."""
    got, end = b"", time.monotonic() + seconds
    sock.settimeout(0.05)
    while time.monotonic() < end:
        try:
            data = sock.recv(65_536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return got, True
        if not data:
            return got, True
        got += data
    return got, False


def test_a_client_that_sends_no_whole_request_is_dropped_and_the_server_answers_on(caplog):
    with serving(create_app(TABLE, limits=FAST)) as port:
        logging.getLogger("uvicorn.error").addHandler(caplog.handler)  # set up by uvicorn, not reaching the root
        slow = [
            connect(port),  # silent
            connect(port, b"GET /api/setup HTTP/1.1\r\nHost: x\r\nX-Slow: "),  # half a head
            connect(port, b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"),  # half a body
        ]
        assert ask(port, "GET", "/api/setup")[0] == 200
        for sock in slow:
            got, closed = closed_within(sock, 5)
            assert closed and got == b"", got
            sock.close()
        assert ask(port, "GET", "/api/setup")[0] == 200
    logging.getLogger("uvicorn.error").removeHandler(caplog.handler)
    assert not [r for r in caplog.records if r.exc_info], "a traceback in the log"


@pytest.mark.parametrize("requests,last", [(400, b""), (10, b"Connection: close\r\n")], ids=["kept-alive", "closing"])
def test_a_client_that_reads_no_answer_is_dropped_and_the_server_answers_on(requests, last):
    """Answers pile up unread (the server's write buffer full, or the connection closing with
    bytes unsent): the connection is dropped, the unsent answers discarded."""
    with serving(create_app(TABLE, limits=FAST), send_buffer=4096) as port:
        one = b"GET /static/table.js HTTP/1.1\r\nHost: x\r\n"
        sock = connect(port, (one + b"\r\n") * (requests - 1) + one + last + b"\r\n", receive_buffer=4096)
        assert ask(port, "GET", "/api/setup")[0] == 200
        time.sleep(2.0)
        got, closed = closed_within(sock, 3)
        sock.close()
        assert closed and got.count(b"HTTP/1.1 200") < requests
        assert ask(port, "GET", "/api/setup")[0] == 200


def test_a_client_that_reads_slowly_but_steadily_gets_every_answer():
    """It reads about 80 kB a second, a few kB at a time: the server's buffer of its answers
    (64 kB) drains in time, though never at once."""
    with serving(create_app(TABLE, limits=Limits(client_timeout=2.0)), send_buffer=4096) as port:
        one = b"GET /static/table.js HTTP/1.1\r\nHost: x\r\n\r\n"
        sock = connect(port, one * 24, receive_buffer=4096)
        got, data = b"", b"-"
        while got.count(b"HTTP/1.1 200") < 24 and data:
            time.sleep(0.05)
            got += (data := sock.recv(4096))
        sock.close()
        assert got.count(b"HTTP/1.1 200") == 24


def test_past_the_connection_cap_a_new_client_is_answered_and_the_longest_waiting_gives_way():
    with serving(create_app(TABLE, limits=Limits(connections=4))) as port:
        slow = [connect(port, b"GET / HTTP/1.1\r\n") for _ in range(4)]
        time.sleep(0.3)
        assert ask(port, "GET", "/api/setup")[0] == 200
        assert closed_within(slow[0], 2)[1], "the longest waiting connection is still open"
        assert not any(closed_within(sock, 0.05)[1] for sock in slow[2:])  # the others wait on
        for sock in slow:
            sock.close()


# ---------------------------------------------------------------------- games per client


def new_game(port: int, source: str) -> tuple[int, dict]:
    return ask(port, "POST", "/api/games", b'{"hands": 1}', source=source)


def test_a_flood_of_new_games_is_429_then_503_and_drops_no_game_in_play():
    with serving(create_app(TABLE, seed=0, limits=Limits(games_per_client=3, games=4))) as port:
        mine = [new_game(port, "127.0.0.2") for _ in range(10)]
        assert [status for status, _ in mine] == [201] * 3 + [429] * 7
        assert "this address has 3 games in play" in mine[3][1]["detail"]
        theirs = new_game(port, "127.0.0.3")
        assert theirs[0] == 201  # the table is full now
        status, refused = new_game(port, "127.0.0.4")
        assert status == 503 and "keeps 4 games in play" in refused["detail"]
        for _, view in mine[:3] + [theirs]:
            assert ask(port, "GET", f"/api/games/{view['game']}")[0] == 200


def test_a_clients_game_untouched_for_a_while_gives_way_to_its_next():
    app = create_app(TABLE, seed=0, limits=Limits(games_per_client=2, own_idle=60))
    now = [0.0]
    app.state.games.clock = lambda: now[0]  # the table's clock, moved by hand
    with serving(app) as port:
        first, second = (new_game(port, "127.0.0.2")[1]["game"] for _ in range(2))
        theirs = new_game(port, "127.0.0.3")[1]["game"]
        now[0] = 59.0
        assert new_game(port, "127.0.0.2")[0] == 429
        now[0] = 61.0
        assert ask(port, "GET", f"/api/games/{second}")[0] == 200  # touched: the first is the oldest
        assert new_game(port, "127.0.0.2")[0] == 201
        assert [ask(port, "GET", f"/api/games/{g}")[0] for g in (first, second, theirs)] == [404, 200, 200]


# ---------------------------------------------------------------------- CPU per request


def test_a_search_game_waits_for_a_search_slot_or_is_answered_503_unchanged(monkeypatch):
    monkeypatch.setattr(server, "SEARCH_AGENTS", frozenset({"heuristic"}))  # a search agent's cost, not its time
    app = create_app(["human", "heuristic", "random", "random"], seed=0, limits=Limits(searches=1, search_wait=0.05))
    with serving(app) as port:
        view = ask(port, "POST", "/api/games", b'{"hands": 1, "seed": 4}')[1]
        game, action = view["game"], b'{"action": %d}' % view["legal"][0]["id"]
        light = ask(port, "POST", "/api/games", b'{"hands": 1, "opponents": ["random", "random", "random"]}')[1]
        app.state.search_slots.acquire()
        try:
            status, busy = ask(port, "POST", f"/api/games/{game}/actions", action)
            assert status == 503 and "the table is busy" in busy["detail"]
            assert ask(port, "GET", f"/api/games/{game}") == (200, view)  # unchanged
            assert ask(port, "POST", "/api/games", b'{"hands": 1}')[0] == 503  # a new search game too
            move = b'{"action": %d}' % light["legal"][0]["id"]
            assert ask(port, "POST", f"/api/games/{light['game']}/actions", move)[0] == 200  # no search: plays on
        finally:
            app.state.search_slots.release()
        assert ask(port, "POST", f"/api/games/{game}/actions", action)[0] == 200


def test_a_search_agent_chosen_in_the_browser_plays_within_its_budget():
    with serving(create_app(TABLE, seed=0)) as port:
        assert ask(port, "GET", "/api/setup")[1]["budgets"] == {"openspiel-ismcts": "openspiel-ismcts:simulations=200"}
        pytest.importorskip("pyspiel")
        body = json.dumps({"hands": 1, "seed": 3, "opponents": ["openspiel-ismcts", "random", "random"]}).encode()
        status, view = ask(port, "POST", "/api/games", body)
        assert status == 201 and view["labels"][1] == "openspiel-ismcts:simulations=200"
