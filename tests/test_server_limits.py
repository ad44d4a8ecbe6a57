"""What one client may hold of the server (``barbu serve``, ``barbu_env.play.web.limits``): a
connection that sends no complete request head, or a body that never ends, is timed out;
connections past the cap close the one waiting longest on its client (and are answered
503 when every one is being answered); bodies held together stay within a budget; each
client address keeps its own share of games, so a flood of new games from one address
drops nobody else's (it is answered 429); search agents play within a per-move budget and
a cap on concurrent searches (503 when busy, the game unchanged); and the log says each
kind of failure once per interval, in one line.

Real HTTP to uvicorn on 127.0.0.1 (``live_server``) with small limits, so that each
test takes about a second; the app's own bounds go through the ASGI app in-process."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_server import serving  # noqa: E402
from test_server_hardening import asgi  # noqa: E402

from barbu_env.play.web.limits import MIN_CONNECTIONS, Limits, OncePer, connection_cap  # noqa: E402
from barbu_env.play.web.server import BROWSER_BUDGETS, create_app  # noqa: E402

HOST = "127.0.0.1"
TABLE = ["human", "random", "random", "random"]


def connect(port: int, data: bytes = b"", source: str = HOST) -> socket.socket:
    """A connection from the loopback address ``source``, ``data`` sent."""
    sock = socket.create_connection((HOST, port), timeout=10, source_address=(source, 0))
    if data:
        sock.sendall(data)
    return sock


def read_until_closed(sock: socket.socket, within: float) -> tuple[bytes, float | None]:
    """What the server sends until it closes the connection, and after how many seconds it
    closed it (``None``: still open after ``within`` seconds)."""
    start, got = time.monotonic(), b""
    sock.settimeout(0.05)
    while time.monotonic() - start < within:
        try:
            data = sock.recv(65_536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return got, time.monotonic() - start
        if not data:
            return got, time.monotonic() - start
        got += data
    return got, None


def request(
    port: int, method: str, path: str, body: bytes = b"", sock: socket.socket | None = None, source: str = HOST
) -> bytes:
    """One whole request on ``sock`` (or a new connection from ``source``); the answer's
    bytes (head and body)."""
    sock = sock or connect(port, source=source)
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    sock.settimeout(10)
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(65_536)
    length = int(next(line.split(b":")[1] for line in got.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(got.split(b"\r\n\r\n", 1)[1]) < length:
        got += sock.recv(65_536)
    return got


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


# ---------------------------------------------------------------------- slow clients


def test_a_half_sent_head_is_answered_408_and_closed_and_a_silent_connection_closed():
    app = create_app(TABLE, limits=Limits(header_timeout=0.5))
    with serving(app) as port:
        half = connect(port, b"GET /api/setup HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        silent = connect(port)
        kept = connect(port)  # answered once, then half a head on the kept-alive connection
        assert status_of(request(port, "GET", "/api/setup", sock=kept)) == 200
        kept.sendall(b"GET /api/setup HTTP/1.1\r\nHo")
        for sock, answer in ((half, b"HTTP/1.1 408"), (silent, b""), (kept, b"HTTP/1.1 408")):
            got, after = read_until_closed(sock, within=5)
            assert after is not None and after < 3, "the connection is still open"
            assert got.startswith(answer) and (not answer or b"no complete request head" in got), got
            sock.close()
        assert status_of(request(port, "GET", "/api/setup")) == 200  # the server answers on


def test_a_body_that_never_ends_is_answered_408_within_its_deadline():
    app = create_app(TABLE, limits=Limits(body_timeout=0.5))
    with serving(app) as port:
        sock = connect(port, b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"{" * 1000)
        got, after = read_until_closed(sock, within=5)
        sock.close()
        assert after is not None and after < 3 and got.startswith(b"HTTP/1.1 408"), got
        assert b"did not arrive within 0.5 s" in got


def test_bodies_held_together_stay_within_the_budget_and_a_stalled_one_gives_way():
    """One upload holds 40 kB of a 50 kB budget and stalls: another upload is answered 503
    once past its first 16 kB (a small request still goes through); once the first has
    sent nothing for ``body_stall``, it is answered 408 and the next upload is taken."""
    app = create_app(TABLE, limits=Limits(body_budget=50_000, body_stall=0.5))
    with serving(app) as port:
        stalled = connect(port, b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        stalled.sendall(b" " * 40_000)
        time.sleep(0.2)
        refused = request(port, "POST", "/api/replays", b" " * 30_000)
        assert status_of(refused) == 503 and b"too many uploads at once" in refused
        assert b"retry-after: 1" in refused.lower()
        assert status_of(request(port, "POST", "/api/games", b'{"hands": 1}')) == 201
        time.sleep(0.6)
        assert status_of(request(port, "POST", "/api/replays", b" " * 30_000)) == 422  # read whole: not a record
        got, after = read_until_closed(stalled, within=3)
        stalled.close()
        assert after is not None and got.startswith(b"HTTP/1.1 408") and b"stalled for 0.5 s" in got, got


def test_one_address_holds_at_most_its_share_of_the_bodies():
    """An address that holds its 50 kB share with a stalled upload is answered 503 for its
    next upload; another address's upload is taken."""
    app = create_app(TABLE, limits=Limits(client_body_budget=50_000))
    with serving(app) as port:
        stalled = connect(port, b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        stalled.sendall(b" " * 40_000)
        time.sleep(0.2)
        refused = request(port, "POST", "/api/replays", b" " * 30_000)
        assert status_of(refused) == 503 and b"too many uploads from this address at once" in refused
        assert status_of(request(port, "POST", "/api/replays", b" " * 30_000, source="127.0.0.2")) == 422
        stalled.close()


def unread_client(port: int, requests: int, last: bytes = b"") -> socket.socket:
    """A connection with a small receive buffer that sends ``requests`` pipelined requests
    for a 6 kB page (the last one with the header ``last``) and reads nothing."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((HOST, port))
    one = b"GET /static/table.js HTTP/1.1\r\nHost: x\r\n"
    sock.sendall((one + b"\r\n") * (requests - 1) + one + last + b"\r\n")
    return sock


def answers_read(sock: socket.socket, within: float) -> tuple[int, float | None]:
    """How many answers the client gets when it reads at last, and after how many seconds
    the server had closed the connection (``None``: still open)."""
    got, after = read_until_closed(sock, within)
    sock.close()
    return got.count(b"HTTP/1.1 200"), after


@pytest.mark.parametrize(
    "requests,last",
    [(400, b""), (400, b"Connection: close\r\n"), (10, b"Connection: close\r\n")],
    ids=["kept-alive", "closing", "closing-below-the-buffers-high-water-mark"],
)
def test_a_client_that_reads_no_answer_is_dropped_after_the_send_timeout(requests, last):
    """Answers pile up unread (a slow or hostile client): within ``send_timeout`` of the
    server's buffer filling, or of its closing with bytes unsent, the connection is
    dropped and what was left unsent is discarded; the server answers others meanwhile."""
    app = create_app(TABLE, limits=Limits(send_timeout=0.5))
    with serving(app, send_buffer=4096) as port:  # small kernel buffers: the server's own fills
        sock = unread_client(port, requests, last)
        assert status_of(request(port, "GET", "/api/setup")) == 200
        time.sleep(2.0)
        answered, after = answers_read(sock, within=4)
        assert after is not None and answered < requests, (answered, after)
        assert status_of(request(port, "GET", "/api/setup")) == 200


def test_a_client_that_reads_slowly_but_steadily_gets_every_answer():
    """A client taking 32 kB/s of answers piled up past the server's buffer keeps its
    connection: it takes twice the 16 kB asked in every send_timeout (1 s), though it
    never empties the buffer (about 50 kB to take) within one."""
    app = create_app(TABLE, limits=Limits(send_timeout=1.0))
    with serving(app, send_buffer=4096) as port:
        sock = unread_client(port, 16)
        got, start = b"", time.monotonic()
        sock.settimeout(0.05)
        while got.count(b"HTTP/1.1 200") < 16 and time.monotonic() - start < 20:
            time.sleep(0.125)
            try:
                data = sock.recv(4096)
            except TimeoutError:
                continue
            if not data:
                break
            got += data
        sock.close()
        assert got.count(b"HTTP/1.1 200") == 16, (got.count(b"HTTP/1.1 200"), time.monotonic() - start)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc")
def test_answers_waiting_on_clients_that_do_not_read_hold_no_file_open():
    """The page's files are served from memory: answers to many clients that do not read
    hold their sockets, not a file each besides (which the connection cap does not count)."""
    from barbu_env.play.web.server import STATIC

    def static_files_open() -> int:
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/self/fd/{fd}").startswith(str(STATIC))
        return count

    app = create_app(TABLE, limits=Limits(send_timeout=30))
    with serving(app, send_buffer=4096) as port:
        stalled = [unread_client(port, 30) for _ in range(40)]
        held, start = 0, time.monotonic()
        while time.monotonic() - start < 1.5:  # the most open at once while the answers pile up
            held = max(held, static_files_open())
            time.sleep(0.02)
        for sock in stalled:
            sock.close()
    assert held == 0, f"{held} of the page's files were open at once for answers to unread clients"


def test_past_the_connection_cap_the_longest_waiting_connection_gives_way():
    app = create_app(TABLE, limits=Limits(connections=MIN_CONNECTIONS))
    with serving(app) as port:
        slow = [connect(port, b"GET / HTTP/1.1\r\n") for _ in range(MIN_CONNECTIONS)]
        time.sleep(0.3)
        assert status_of(request(port, "GET", "/api/setup")) == 200  # a new client is answered
        got, after = read_until_closed(slow[0], within=2)
        assert after is not None, "the longest waiting connection is still open"
        still_open = [read_until_closed(s, within=0.05)[1] is None for s in slow[2:]]
        assert all(still_open)  # the others wait on
        for s in slow:
            s.close()


def test_past_the_cap_with_every_connection_being_answered_a_new_one_is_answered_503():
    """Every connection is a request waiting for a search slot (held here): the next
    connection is answered 503 at once and closed; the requests are answered in turn."""
    limits = Limits(connections=MIN_CONNECTIONS, searches=1, search_wait=3, games_per_client=100)
    app = create_app(["human", "pimc", "random", "random"], limits=limits)
    with serving(app) as port:
        app.state.search_slots.acquire()
        try:
            body = b'{"hands": 1}'
            head = f"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            busy = [connect(port, head + body) for _ in range(MIN_CONNECTIONS)]
            time.sleep(0.5)
            got, after = read_until_closed(connect(port), within=2)
            assert after is not None and got.startswith(b"HTTP/1.1 503"), got
            assert b"its most connections" in got
        finally:
            app.state.search_slots.release()
        for s in busy:
            s.close()


def test_the_connection_cap_fits_the_processs_file_limit():
    limits = Limits(connections=1000, fd_reserve=64, backlog=64)
    assert connection_cap(limits, open_files=100_000) == 1000
    assert connection_cap(limits, open_files=256) == 256 - 64 - 128
    with pytest.raises(ValueError, match=r"may open only 200 files \(ulimit -n\)"):
        connection_cap(limits, open_files=200)


# ---------------------------------------------------------------------- games per client


def new_game(app, client: str, hands: int = 1):
    return asgi(app, "POST", "/api/games", json.dumps({"hands": hands}).encode(), client=client)


def test_a_flood_of_new_games_from_one_address_is_429_and_drops_no_one_elses_game():
    app = create_app(TABLE, seed=0, limits=Limits(games_per_client=3, games=8))
    theirs = new_game(app, "10.0.0.2").json()["game"]
    mine = [new_game(app, "10.0.0.1") for _ in range(64)]
    assert [a.status for a in mine[:3]] == [201] * 3
    refused = mine[3:]
    assert {a.status for a in refused} == {429}
    detail = refused[0].json()["detail"]
    assert "this address has 3 games in play, the most one address may keep" in detail, detail
    assert asgi(app, "GET", f"/api/games/{theirs}", client="10.0.0.2").status == 200
    for answer in mine[:3]:  # and the flooder's own games are kept too
        assert asgi(app, "GET", f"/api/games/{answer.json()['game']}").status == 200


def test_a_clients_game_untouched_for_a_while_gives_way_to_its_next():
    app = create_app(TABLE, seed=0, limits=Limits(games_per_client=2, own_idle=60))
    now = [0.0]
    app.state.games.clock = lambda: now[0]  # the table's clock, moved by hand
    first, second = (new_game(app, "10.0.0.1").json()["game"] for _ in range(2))
    theirs = new_game(app, "10.0.0.2").json()["game"]
    now[0] = 59.0
    assert new_game(app, "10.0.0.1").status == 429
    now[0] = 61.0
    assert asgi(app, "GET", f"/api/games/{second}").status == 200  # touched: the first is the oldest
    assert new_game(app, "10.0.0.1").status == 201
    assert asgi(app, "GET", f"/api/games/{first}").status == 404
    assert asgi(app, "GET", f"/api/games/{second}").status == 200
    assert asgi(app, "GET", f"/api/games/{theirs}").status == 200


def test_a_full_table_answers_503_and_drops_no_game_in_play():
    app = create_app(TABLE, seed=0, limits=Limits(games_per_client=3, games=4))
    kept = [new_game(app, client).json()["game"] for client in ("10.0.0.1",) * 3 + ("10.0.0.2",)]
    refused = new_game(app, "10.0.0.3")
    assert refused.status == 503 and "keeps 4 games in play" in refused.json()["detail"]
    assert all(asgi(app, "GET", f"/api/games/{game}").status == 200 for game in kept)


# ---------------------------------------------------------------------- CPU per request


def test_a_search_game_waits_for_a_search_slot_or_is_answered_503_unchanged():
    app = create_app(["human", "pimc", "random", "random"], seed=0, limits=Limits(searches=1, search_wait=0.05))
    view = asgi(app, "POST", "/api/games", b'{"hands": 1, "seed": 4}').json()
    game, action = view["game"], view["legal"][0]["id"]
    light = asgi(app, "POST", "/api/games", b'{"hands": 1, "opponents": ["random", "random", "random"]}')
    app.state.search_slots.acquire()
    try:
        busy = asgi(app, "POST", f"/api/games/{game}/actions", b'{"action": %d}' % action)
        assert busy.status == 503 and "the table is busy" in busy.json()["detail"]
        assert asgi(app, "GET", f"/api/games/{game}").json() == view  # unchanged
        assert asgi(app, "POST", "/api/games", b'{"hands": 1}').status == 503  # a new search game too
        light_view = light.json()  # a game without search agents plays on
        move = light_view["legal"][0]["id"]
        assert asgi(app, "POST", f"/api/games/{light_view['game']}/actions", b'{"action": %d}' % move).status == 200
    finally:
        app.state.search_slots.release()
    assert asgi(app, "POST", f"/api/games/{game}/actions", b'{"action": %d}' % action).status == 200


def test_a_search_agent_chosen_in_the_browser_plays_within_its_budget():
    app = create_app(TABLE, seed=0)
    setup = json.loads(asgi(app, "GET", "/api/setup").body)
    assert setup["budgets"] == {"openspiel-ismcts": "openspiel-ismcts:simulations=200"}
    assert BROWSER_BUDGETS == {"openspiel-ismcts": {"simulations": 200}}
    pytest.importorskip("pyspiel")
    body = json.dumps({"hands": 1, "seed": 3, "opponents": ["openspiel-ismcts", "random", "random"]}).encode()
    answer = asgi(app, "POST", "/api/games", body)
    assert answer.status == 201 and answer.json()["labels"][1] == "openspiel-ismcts:simulations=200"


# ---------------------------------------------------------------------- the log


def test_the_log_says_each_kind_of_failure_once_per_interval_in_one_line():
    now = [0.0]
    once = OncePer(seconds=10, clock=lambda: now[0])
    logger = logging.getLogger("test_server_limits.once")
    logger.propagate = False
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(self.format(record))

    handler = Keep()
    logger.addHandler(handler)
    logger.addFilter(once)
    try:
        emfile = OSError(24, "Too many open files")
        for _ in range(5000):
            logger.error("socket.accept() out of system resource\nsocket: <fd=3>", exc_info=(OSError, emfile, None))
        logger.warning("Invalid HTTP request received.")
        assert lines == [
            "socket.accept() out of system resource (OSError: [Errno 24] Too many open files)",
            "Invalid HTTP request received.",
        ]
        now[0] = 10.5
        logger.error("socket.accept() out of system resource\nsocket: <fd=3>", exc_info=(OSError, emfile, None))
        assert lines[-1].endswith("[and 4999 more like it in the 10 s before]")
        try:
            raise KeyError("bug")
        except KeyError:
            logger.exception("Exception in ASGI application")
        assert "Traceback" in lines[-1] and lines[-1].startswith("Exception in ASGI application (KeyError: 'bug')")
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(once)


def test_many_connections_and_no_descriptors_left_make_one_line_per_interval(tmp_path):
    """A server allowed 160 files, 300 connections held open at once: it keeps serving, and
    its log holds a few lines, none a traceback (uvicorn's asyncio logged one per accept)."""
    script = tmp_path / "server.py"
    script.write_text(
        "import resource, socket\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (160, 160))\n"
        "from barbu_env.play.web.limits import Limits\n"
        "from barbu_env.play.web.server import create_app, serve\n"
        "sock = socket.socket(); sock.bind(('127.0.0.1', 0)); print(sock.getsockname()[1], flush=True)\n"
        "serve(create_app(['human', 'random', 'random', 'random'], limits=Limits(backlog=16)), sock=sock)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                connect(port).close()
                break
            except OSError:
                time.sleep(0.1)
        held, answered = [], []
        for _ in range(300):
            try:  # a connect the kernel's full accept queue makes wait is given up
                sock = socket.create_connection((HOST, port), timeout=0.2)
                sock.sendall(b"GET / HTTP/1.1\r\n")
                held.append(sock)
            except OSError:
                pass
        for _ in range(5):
            answered.append(status_of(request(port, "GET", "/api/setup")))
        for s in held:
            s.close()
    finally:
        proc.terminate()
        _, log = proc.communicate(timeout=30)
    assert answered == [200] * 5
    assert "Traceback" not in log and len(log.splitlines()) <= 10, log[:2000]


def test_barbu_serve_refuses_a_too_low_file_limit_in_one_line_before_it_announces_an_address():
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))\n"
        "from barbu_env.cli.main import main\n"
        "sys.exit(main(['serve', '--port', '8799']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stdout == ""  # no "Barbu table at ..." for a server that never starts
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "may open only 100 files (ulimit -n)" in done.stderr
