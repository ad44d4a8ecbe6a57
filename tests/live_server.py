"""An app served by uvicorn on a free port of 127.0.0.1, in a thread, for the tests that
need real HTTP: ``with serving(app) as port: ...``, under the app's limits as ``barbu
serve`` runs it (``barbu_env.play.web.server.uvicorn_config``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from barbu_env.play.web.server import uvicorn_config


@contextmanager
def serving(app, send_buffer: int | None = None) -> Iterator[int]:
    """Serve ``app`` on 127.0.0.1 until the block ends; yields the port. ``send_buffer``:
    the kernel's send buffer of each connection, in bytes (its ``SO_SNDBUF``, which the
    accepted connections inherit from the listening socket; default: the system's)."""
    sock = socket.socket()
    if send_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the server did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
