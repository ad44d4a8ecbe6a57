"""The server (``barbu serve``) under load, on 127.0.0.1 only: 16 clients at once play games
for a minute, with malformed and oversized requests among their moves, and in the middle
of the minute a few hundred slow clients hold what they can: request heads never
finished (one more byte every 2 s) and uploads that announce 2 MB, send 1 MB and stall;
each one the server closes comes back a second later. The server may open only
``FILES`` (256) files, fewer than the slow clients' connections.

No answer to the 16 clients is a 5xx, every finished game's record replays to the scores
the server showed, the server's memory at the end is within ``RSS_GROWTH_MB`` of where it
stood after a warm-up (its games, replays and the bodies it holds are capped), its file
descriptors stay within its limit, and its log holds a few lines and no traceback. A slow
test: it prints its figures (requests per second, p50/p99 latency before and during the
slow clients, memory, descriptors, what the slow clients were answered); docs/play.md
("Under load") has them and the command that reproduces them."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from barbu_env.evaluation.records import GameRecord, replay_record  # noqa: E402

HOST = "127.0.0.1"  # never any other address (the clients' own addresses are loopback ones too)
CLIENTS = 16
SECONDS = float(os.environ.get("BARBU_LOAD_SECONDS", "60"))
MAX_REQUESTS_PER_CLIENT = 20_000
HANDS = 4  # hands per game, so that many games finish within the minute
RSS_GROWTH_MB = 100
#: The server's file limit (``ulimit -n``): fewer than the slow clients' connections
#: (``BARBU_LOAD_FILES=4096``: room for them all, so that the deadlines close them).
FILES = int(os.environ.get("BARBU_LOAD_FILES", "256"))
#: The slow clients: half-sent heads and half-sent bodies, from a quarter of the run to
#: five seconds before its end.
SLOW_HEADS, SLOW_BODIES = 300, 300
SLOW_FROM = SECONDS / 4
SLOW_UNTIL = SECONDS - 5
#: At most this many lines in the server's log for the whole run.
MAX_LOG_LINES = 60
SERVER = f"""
import resource, socket
resource.setrlimit(resource.RLIMIT_NOFILE, ({FILES}, {FILES}))
from barbu_env.play.web.server import create_app, serve
sock = socket.socket()
sock.bind(("{HOST}", 0))
print(sock.getsockname()[1], flush=True)
app = create_app(["human", "heuristic", "random", "heuristic"], seed=0)
serve(app, sock=sock)
"""
#: The slow clients, in a process of their own (so that they do not slow the 16 clients'
#: threads down): ``python -c SLOW port heads bodies seconds``; prints its figures as JSON.
SLOW = r"""
import errno, json, selectors, socket, sys, time
port, heads, bodies, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
HEAD = b"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "
UPLOAD = b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n"
SENT = 1_000_000  # of the 2 MB announced
sel = selectors.DefaultSelector()
stats = {"opened": 0, "closed_by_server": 0, "answers": {}, "connect_failures": 0, "most_open": 0}
later = []  # (when, kind): connections to open again
open_now = set()

def start(kind):
    s = socket.socket()
    s.setblocking(False)
    code = s.connect_ex(("127.0.0.1", port))
    if code not in (0, errno.EINPROGRESS):
        stats["connect_failures"] += 1
        s.close()
        later.append((time.monotonic() + 1, kind))
        return
    c = {"sock": s, "kind": kind, "out": (HEAD if kind == "head" else UPLOAD + b" " * SENT), "got": b"",
         "next_byte": time.monotonic() + 2, "connected": False}
    sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, c)
    open_now.add(id(c))
    stats["opened"] += 1

def finish(c, by_server):
    sel.unregister(c["sock"])
    c["sock"].close()
    open_now.discard(id(c))
    if by_server:
        stats["closed_by_server"] += 1
        status = c["got"][9:12].decode("ascii", "replace") if c["got"].startswith(b"HTTP/1.1 ") else "none"
        stats["answers"][status] = stats["answers"].get(status, 0) + 1
        later.append((time.monotonic() + 1, c["kind"]))

for k in range(heads + bodies):
    start("head" if k < heads else "body")
end = time.monotonic() + seconds
while time.monotonic() < end:
    for key, events in sel.select(timeout=0.1):
        c = key.data
        try:
            if events & selectors.EVENT_READ:
                data = c["sock"].recv(65536)
                if not data:
                    finish(c, True)
                    continue
                c["got"] += data[:64]
            if events & selectors.EVENT_WRITE and c["out"]:
                n = c["sock"].send(c["out"][:65536])
                c["out"] = c["out"][n:]
                if not c["out"]:
                    sel.modify(c["sock"], selectors.EVENT_READ, c)
        except OSError:
            finish(c, True)
    now = time.monotonic()
    for key in list(sel.get_map().values()):  # a half-sent head gets one more byte every 2 s
        c = key.data
        if c["kind"] == "head" and not c["out"] and now > c["next_byte"]:
            c["next_byte"] = now + 2
            try:
                c["sock"].send(b"a")
            except OSError:
                finish(c, True)
    due = [k for w, k in later if w <= now]
    later[:] = [(w, k) for w, k in later if w > now]
    for kind in due:
        start(kind)
    stats["most_open"] = max(stats["most_open"], len(open_now))
print(json.dumps(stats), flush=True)
"""
BAD_BODIES = [b'{"hands": NaN}', b'{"hands": true}', b'{"seed": "3"}', b"{not json", b'{"action": Infinity}']


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Client:
    """One player's connection: plays games of ``HANDS`` hands by random legal actions and
    now and then sends a malformed or an oversized request instead of a move."""

    def __init__(self, port: int, k: int, end: float):
        self.port, self.rng, self.end = port, np.random.default_rng(k), end
        self.source = (f"127.0.0.{k % 250 + 2}", 0)  # a person's own address (the server keeps games per address)
        self.conn = http.client.HTTPConnection(HOST, port, timeout=30, source_address=self.source)
        self.latencies: list[float] = []
        self.times: list[float] = []  # when each request was answered (time.monotonic)
        self.retries = 0  # requests sent again on a new connection (the server had closed the old one)
        self.statuses: dict[int, int] = {}
        self.games: list[tuple[dict, list[int]]] = []  # (record, the scores the table showed)
        self.errors: list[str] = []
        self.oversized = 0

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        start = time.perf_counter()
        for attempt in range(5):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException):  # the server closed the connection unanswered
                self.conn.close()
                if attempt == 4:
                    raise
                self.retries += 1
        self.latencies.append(time.perf_counter() - start)
        self.times.append(time.monotonic())
        self.statuses[response.status] = self.statuses.get(response.status, 0) + 1
        return response.status, json.loads(data) if data else {}

    def oversized_upload(self) -> None:
        """3 MB sent chunked (no length) on a connection of its own: refused 413 past 2 MB."""
        start = time.perf_counter()
        sock = socket.create_connection((HOST, self.port), timeout=30, source_address=self.source)
        reply = b""
        try:
            sock.sendall(b"POST /api/replays HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n" % 65_536 + b" " * 65_536 + b"\r\n"
            for _ in range(48):
                sock.sendall(chunk)
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused mid-send: the answer is waiting
        try:
            while b"\r\n" not in reply and (data := sock.recv(4096)):
                reply += data
        except ConnectionResetError:
            pass
        finally:
            sock.close()
        self.latencies.append(time.perf_counter() - start)
        self.times.append(time.monotonic())
        self.oversized += 1
        if reply:
            status = int(reply.split(b" ", 2)[1])
            self.statuses[status] = self.statuses.get(status, 0) + 1
        else:
            self.statuses[0] = self.statuses.get(0, 0) + 1  # cut off before the answer was read

    def mischief(self, game: str) -> None:
        pick = self.rng.integers(len(BAD_BODIES) + 1)
        if pick == len(BAD_BODIES):
            self.oversized_upload()
            return
        path = "/api/games" if pick < 3 else f"/api/games/{game}/actions"
        status, answer = self.call("POST", path, BAD_BODIES[pick])
        if not 400 <= status < 500 or not isinstance(answer.get("detail"), str):
            self.errors.append(f"{BAD_BODIES[pick]!r}: {status} {answer}")

    def run(self) -> None:
        try:
            while time.monotonic() < self.end and len(self.latencies) < MAX_REQUESTS_PER_CLIENT:
                self.play_one()
        except Exception as e:  # reported by the test, with the client's other figures
            self.errors.append(repr(e))
        finally:
            self.conn.close()

    def play_one(self) -> None:
        status, view = self.call("POST", "/api/games", json.dumps({"hands": HANDS}).encode())
        if status != 201:
            self.errors.append(f"new game: {status} {view}")
            return
        game = view["game"]
        while not view["over"]:
            if time.monotonic() > self.end:
                return
            if self.rng.random() < 0.03:
                self.mischief(game)
                continue
            action = view["legal"][self.rng.integers(len(view["legal"]))]["id"]
            status, view = self.call("POST", f"/api/games/{game}/actions", json.dumps({"action": action}).encode())
            if status != 200:
                self.errors.append(f"action {action}: {status} {view}")
                return
        status, record = self.call("GET", f"/api/games/{game}/record")
        if status != 200:
            self.errors.append(f"record: {status}")
            return
        self.games.append((record, view["scores"]))
        if len(self.games) % 3 == 1:  # now and then through the replay viewer too
            status, replay = self.call("POST", "/api/replays", json.dumps(record).encode())
            if status != 201 or replay["final_scores"] != view["scores"]:
                self.errors.append(f"replay: {status}")


@pytest.fixture
def server():
    """The server in a process of its own, its log in a file; yields (process, port, log path)."""
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        port = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield proc, port, Path(log.name)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        Path(log.name).unlink()


def percentiles_ms(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"requests": 0}
    x = np.array(latencies)
    return {
        "requests": len(x),
        "p50_ms": round(1000 * float(np.percentile(x, 50)), 1),
        "p99_ms": round(1000 * float(np.percentile(x, 99)), 1),
    }


@pytest.mark.slow
def test_sixteen_clients_beside_slow_clients_no_5xx_records_replay_memory_and_descriptors_bounded(server):
    proc, port, log = server
    warm = Client(port, 999, time.monotonic() + 60)
    for _ in range(3):  # imports, first games, first replay: before the memory baseline
        warm.play_one()
    assert not warm.errors, warm.errors
    start_rss = peak_rss = rss_mb(proc.pid)
    start_fds = peak_fds = descriptors(proc.pid)
    began = time.monotonic()
    end = began + SECONDS
    clients = [Client(port, k, end) for k in range(CLIENTS)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    slow = None
    while any(t.is_alive() for t in threads) and time.monotonic() < end + 60:
        if slow is None and time.monotonic() >= began + SLOW_FROM:
            args = [str(port), str(SLOW_HEADS), str(SLOW_BODIES), str(SLOW_UNTIL - SLOW_FROM)]
            slow = subprocess.Popen([sys.executable, "-c", SLOW, *args], stdout=subprocess.PIPE, text=True)
        peak_rss = max(peak_rss, rss_mb(proc.pid))
        peak_fds = max(peak_fds, descriptors(proc.pid))
        time.sleep(0.25)
    for t in threads:
        t.join(timeout=5)
    elapsed = time.monotonic() - began
    assert not any(t.is_alive() for t in threads), "a client did not stop"
    assert slow is not None, "the slow clients never started"
    slow_figures = json.loads(slow.communicate(timeout=60)[0])
    time.sleep(1)  # the slow clients' last connections close
    end_rss, end_fds = rss_mb(proc.pid), descriptors(proc.pid)

    latencies = [x for c in clients for x in c.latencies]
    during = [x for c in clients for x, t in zip(c.latencies, c.times) if began + SLOW_FROM <= t < began + SLOW_UNTIL]
    before = [x for c in clients for x, t in zip(c.latencies, c.times) if t < began + SLOW_FROM]
    statuses: dict[int, int] = {}
    for c in clients:
        for s, n in c.statuses.items():
            statuses[s] = statuses.get(s, 0) + n
    games = [g for c in clients for g in c.games]
    log_lines = log.read_text().splitlines()
    figures = {
        "clients": CLIENTS,
        "seconds": round(elapsed, 1),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "all": percentiles_ms(latencies),
        "before_slow_clients": percentiles_ms(before),
        "beside_slow_clients": percentiles_ms(during),
        "retries": sum(c.retries for c in clients),
        "games_finished": len(games),
        "oversized": sum(c.oversized for c in clients),
        "statuses": dict(sorted(statuses.items())),
        "rss_mb": {"start": round(start_rss), "peak": round(peak_rss), "end": round(end_rss)},
        "descriptors": {"limit": FILES, "start": start_fds, "peak": peak_fds, "end": end_fds},
        "slow_clients": {"heads": SLOW_HEADS, "bodies": SLOW_BODIES, "seconds": SLOW_UNTIL - SLOW_FROM} | slow_figures,
        "log_lines": len(log_lines),
    }
    print("\nserver under load:", json.dumps(figures))
    print("\n".join(log_lines[:MAX_LOG_LINES]))
    errors = [e for c in clients for e in c.errors]
    assert not errors, errors[:5]
    assert not any(s >= 500 for s in statuses), statuses
    assert statuses.get(413, 0) >= figures["oversized"] // 2  # most oversized uploads read their 413
    assert len(games) >= CLIENTS  # every client finished games
    for record, shown in games:
        _, scores = replay_record(GameRecord.from_dict(record))
        assert scores == shown == record["final_scores"]
    assert figures["beside_slow_clients"]["requests"] >= 10 * CLIENTS  # served all along
    assert slow_figures["closed_by_server"] >= SLOW_HEADS  # the slow clients were timed out or made room
    assert end_rss <= start_rss + RSS_GROWTH_MB, figures["rss_mb"]
    assert peak_fds <= FILES
    assert len(log_lines) <= MAX_LOG_LINES and not any("Traceback" in line for line in log_lines)
