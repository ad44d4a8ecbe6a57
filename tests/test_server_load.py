"""The server (``barbu serve``) under load, on 127.0.0.1 only: 16 clients at once play games
for a minute, with malformed and oversized requests among their moves. No answer is a 5xx,
every finished game's record replays to the scores the server showed, and the server's
memory at the end is within ``RSS_GROWTH_MB`` of where it stood after a warm-up (its games
and replays are capped, so a minute of play must not grow it). A slow test: it prints its
figures (requests per second, p50/p99 latency, peak memory); docs/play.md ("Under load")
has them and the command that reproduces them."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from barbu_env.records import GameRecord, replay_record  # noqa: E402

HOST = "127.0.0.1"  # never any other address
CLIENTS = 16
SECONDS = float(os.environ.get("BARBU_LOAD_SECONDS", "60"))
MAX_REQUESTS_PER_CLIENT = 20_000
HANDS = 4  # hands per game, so that many games finish within the minute
RSS_GROWTH_MB = 100
SERVER = f"""
import socket, sys, uvicorn
from barbu_env.web.server import create_app
sock = socket.socket()
sock.bind(("{HOST}", 0))
print(sock.getsockname()[1], flush=True)
app = create_app(["human", "heuristic", "random", "heuristic"], seed=0)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""
BAD_BODIES = [b'{"hands": NaN}', b'{"hands": true}', b'{"seed": "3"}', b"{not json", b'{"action": Infinity}']


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
        self.conn = http.client.HTTPConnection(HOST, port, timeout=30)
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.games: list[tuple[dict, list[int]]] = []  # (record, the scores the table showed)
        self.errors: list[str] = []
        self.oversized = 0

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        start = time.perf_counter()
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            data = response.read()
        except (ConnectionError, http.client.HTTPException):  # the server closed a kept-alive connection: again
            self.conn.close()
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            data = response.read()
        self.latencies.append(time.perf_counter() - start)
        self.statuses[response.status] = self.statuses.get(response.status, 0) + 1
        return response.status, json.loads(data) if data else {}

    def oversized_upload(self) -> None:
        """3 MB sent chunked (no length) on a connection of its own: refused 413 past 2 MB."""
        start = time.perf_counter()
        sock = socket.create_connection((HOST, self.port), timeout=30)
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
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_sixteen_clients_for_a_minute_no_5xx_records_replay_memory_bounded(server):
    proc, port = server
    warm = Client(port, 999, time.monotonic() + 60)
    for _ in range(3):  # imports, first games, first replay: before the memory baseline
        warm.play_one()
    assert not warm.errors, warm.errors
    start_rss = peak_rss = rss_mb(proc.pid)
    began = time.monotonic()
    end = began + SECONDS
    clients = [Client(port, k, end) for k in range(CLIENTS)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) and time.monotonic() < end + 60:
        peak_rss = max(peak_rss, rss_mb(proc.pid))
        time.sleep(0.25)
    for t in threads:
        t.join(timeout=5)
    elapsed = time.monotonic() - began
    assert not any(t.is_alive() for t in threads), "a client did not stop"
    end_rss = rss_mb(proc.pid)

    latencies = np.array([x for c in clients for x in c.latencies])
    statuses: dict[int, int] = {}
    for c in clients:
        for s, n in c.statuses.items():
            statuses[s] = statuses.get(s, 0) + n
    games = [g for c in clients for g in c.games]
    figures = {
        "clients": CLIENTS,
        "seconds": round(elapsed, 1),
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 1),
        "p99_ms": round(1000 * float(np.percentile(latencies, 99)), 1),
        "games_finished": len(games),
        "oversized": sum(c.oversized for c in clients),
        "statuses": dict(sorted(statuses.items())),
        "rss_mb": {"start": round(start_rss), "peak": round(peak_rss), "end": round(end_rss)},
    }
    print("\nserver under load:", json.dumps(figures))
    errors = [e for c in clients for e in c.errors]
    assert not errors, errors[:5]
    assert not any(s >= 500 for s in statuses), statuses
    assert statuses.get(413, 0) >= figures["oversized"] // 2  # most oversized uploads read their 413
    assert len(games) >= CLIENTS  # every client finished games
    for record, shown in games:
        _, scores = replay_record(GameRecord.from_dict(record))
        assert scores == shown == record["final_scores"]
    assert end_rss <= start_rss + RSS_GROWTH_MB, figures["rss_mb"]
