"""The server (``barbu serve``) under load, on 127.0.0.1 only: 8 clients play games for
``BARBU_LOAD_SECONDS`` (60) while, from the first quarter of the run on, 400 slow clients
hold what they can (heads never finished, uploads stalled after 100 kB), each one dropped
coming back at once; the server may open 256 files. No answer to the 8 is a 5xx, records
replay, memory ends within 100 MB of its start, descriptors stay within the limit, and the
log holds no traceback. It prints its figures."""

from __future__ import annotations

import http.client
import json
import os
import selectors
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

from barbu_env.evaluation.records import GameRecord, replay_record  # noqa: E402

SECONDS = float(os.environ.get("BARBU_LOAD_SECONDS", "60"))
FILES, CLIENTS, SLOW = 256, 8, 400
SERVER = f"""
import resource, socket
resource.setrlimit(resource.RLIMIT_NOFILE, ({FILES}, {FILES}))
from barbu_env.play.web.server import create_app, serve
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(64); print(sock.getsockname()[1], flush=True)
serve(create_app(["human", "heuristic", "random", "heuristic"], seed=0), sock=sock)
"""
SLOW_STARTS = [
    b"POST /api/games HTTP/1.1\r\nHost: x\r\nX-Slow: ",
    b"POST /api/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n" + b" " * 100_000,
]


def figures_of(pid: int) -> tuple[float, int]:
    """The process's memory (MB) and open file descriptors."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").open() if line.startswith("VmRSS:"))
    return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def play(port: int, k: int, end: float, out: dict) -> None:
    """Games of 2 hands by random legal actions, from the address 127.0.0.k+2."""
    rng, conn, address = np.random.default_rng(k), None, f"127.0.0.{k + 2}"

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        nonlocal conn
        for _ in range(5):  # the server may have dropped an idle connection to make room
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(address, 0))
                conn.request(method, path, json.dumps(body) if body else None, {"Content-Type": "application/json"})
                answer = conn.getresponse()
                data = json.loads(answer.read())
                out["statuses"].append(answer.status)
                return answer.status, data
            except (ConnectionError, http.client.HTTPException):
                conn = None
        raise AssertionError("five connections in a row dropped")

    while time.monotonic() < end:
        status, view = call("POST", "/api/games", {"hands": 2})
        while status == 201 and not view["over"] and time.monotonic() < end:
            action = view["legal"][rng.integers(len(view["legal"]))]["id"]
            _, view = call("POST", f"/api/games/{view['game']}/actions", {"action": action})
        if view.get("over"):
            out["games"].append((call("GET", f"/api/games/{view['game']}/record")[1], view["scores"]))


def hold(port: int, start: float, end: float, out: dict) -> None:
    """``SLOW`` slow connections, each one dropped by the server opened again."""
    time.sleep(max(0.0, start - time.monotonic()))
    sel = selectors.DefaultSelector()

    def open_one(kind: int) -> None:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=1)
            sock.sendall(SLOW_STARTS[kind])
            sel.register(sock, selectors.EVENT_READ, kind)
        except OSError:
            out["refused"] += 1

    for k in range(SLOW):
        open_one(k % 2)
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.1):
            sel.unregister(key.fileobj)
            key.fileobj.close()
            out["dropped"] += 1
            open_one(key.data)
    for key in list(sel.get_map().values()):
        key.fileobj.close()


@pytest.mark.slow
def test_clients_play_beside_slow_clients_no_5xx_records_replay_memory_and_descriptors_bounded(tmp_path):
    log = (tmp_path / "server.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        port = int(proc.stdout.readline())
        play(port, 100, time.monotonic() + 5, warm := {"statuses": [], "games": []})  # imports, first games
        start_rss, start_fds = figures_of(proc.pid)
        peak_rss, peak_fds, began = start_rss, start_fds, time.monotonic()
        out = {"statuses": [], "games": [], "dropped": 0, "refused": 0}
        threads = [threading.Thread(target=play, args=(port, k, began + SECONDS, out)) for k in range(CLIENTS)]
        threads.append(threading.Thread(target=hold, args=(port, began + SECONDS / 4, began + SECONDS - 5, out)))
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            rss, fds = figures_of(proc.pid)
            peak_rss, peak_fds = max(peak_rss, rss), max(peak_fds, fds)
            time.sleep(0.25)
        time.sleep(1)
        end_rss, end_fds = figures_of(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    log.seek(0)
    statuses = {s: out["statuses"].count(s) for s in sorted(set(out["statuses"]))}
    rates = {"requests_per_s": round(len(out["statuses"]) / SECONDS), "games": len(out["games"]), "statuses": statuses}
    rates |= {"rss_mb": [round(start_rss), round(peak_rss), round(end_rss)], "fds": [start_fds, peak_fds, end_fds]}
    print("\nserver under load:", json.dumps(rates | {k: out[k] for k in ("dropped", "refused")}))
    assert warm["games"] and out["games"] and not any(s >= 500 for s in statuses), statuses
    for record, shown in out["games"]:
        assert replay_record(GameRecord.from_dict(record))[1] == shown
    assert out["dropped"] >= SLOW  # the slow clients were dropped, at their deadline or to make room
    assert end_rss <= start_rss + 100 and peak_fds <= FILES
    assert "Traceback" not in log.read()
