"""What a client may hold of the browser table's server (``barbu serve``): the bounds that
keep slow or greedy clients from holding it, all in one :class:`Limits`.

=====================  ================================================================
bound                  what happens past it (defaults in parentheses)
=====================  ================================================================
request head           a connection sends a complete request head (at most
                       ``head_bytes``, 16 kB) within ``header_timeout`` (10 s) of opening
                       or of its previous answer, else it is closed (with a 408 if part
                       of a head had come)
request body           a body arrives whole within ``body_timeout`` (30 s) of its head,
                       else 408; it is at most ``record_bytes`` (2 MB) for a record
                       upload and ``request_bytes`` (16 kB) for any other request, else
                       413 as soon as that much has come (``BodyLimit``); past its first
                       ``request_bytes``, a body is held only while the bodies held
                       together stay within ``body_budget`` (32 MB), and those of its
                       client (its address) within ``client_body_budget`` (8 MB): to make
                       room, bodies that have sent nothing for ``body_stall`` (2 s) are
                       answered 408, the longest stalled first (the client's own first),
                       and without such a body the new bytes are answered 503
answers                while answers wait for their client (the server's write buffer
                       full, or the connection closing with bytes unsent), the client
                       takes at least ``SEND_PROGRESS`` (16 kB) of them, or all, in every
                       ``send_timeout`` (30 s), else the connection is dropped, the
                       unsent bytes discarded
connections            at most ``connections`` (1,000) open at once, and fewer where the
                       process may open fewer files: its soft ``ulimit -n`` less
                       ``fd_reserve`` (64) kept for the server's own files and twice the
                       accept ``backlog`` (64) for connections accepted in one burst
                       (:func:`connection_cap`); a connection past the cap closes the one
                       that has waited longest on its client (no request yet, or a body
                       still coming), and if every connection is being answered it is
                       answered 503 itself; so a server under a flood of slow clients
                       never runs out of file descriptors and keeps answering new clients
games                  a client (its address) keeps at most ``games_per_client`` (16)
                       games; its next game replaces its own least recently used game
                       untouched for ``own_idle`` (60 s), or for ``done_idle`` (10 s) if
                       it is over, and without one it is answered 429; the table keeps at
                       most ``games`` (128), and a new game past that replaces the least
                       recently used game untouched for ``idle`` (10 min), or for
                       ``done_idle`` if it is over, else 503 (``barbu_env.play.web.server``)
searches               at most ``searches`` (2) requests at once play moves of a search
                       agent (``SEARCH_AGENTS`` in ``barbu_env.play.web.server``); another waits
                       up to ``search_wait`` (1 s), then is answered 503, its game unchanged
log                    one line per kind of failure per ``log_interval`` (10 s), with a
                       count of those left out (:class:`OncePer`)
=====================  ================================================================

Refusals are JSON ``{"detail": "..."}`` with a one-line reason; a 503 carries
``Retry-After``. The protocol (:func:`protocol_class`) is uvicorn's h11 protocol with the
head timeout, the send timeout and the connection cap added; the middleware
(:class:`BodyLimit`) reads the body with its deadline and caps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: The largest record upload (a whole game's record is about 25 kB).
MAX_RECORD_BYTES = 2_000_000
#: The largest body of any other request (a new game's or an action's is under 200 bytes).
MAX_REQUEST_BYTES = 16_384
#: Fewer connections than this would not serve a table: the server refuses to start.
MIN_CONNECTIONS = 16
#: The least a client takes, in every ``send_timeout``, of the answers waiting for it (or
#: all of them), or its connection is dropped.
SEND_PROGRESS = 16_384
#: Where the table's own warnings go (evicted and timed-out connections, full budgets).
log = logging.getLogger("barbu_env.play.web")


@dataclass(frozen=True)
class Limits:
    """The server's bounds (see the module docstring); every field a positive number."""

    header_timeout: float = 10.0  #: seconds for a complete request head
    head_bytes: int = 16_384  #: the largest request head
    body_timeout: float = 30.0  #: seconds for a whole body, from its head
    request_bytes: int = MAX_REQUEST_BYTES  #: the largest body but a record's
    record_bytes: int = MAX_RECORD_BYTES  #: the largest record upload
    body_budget: int = 32_000_000  #: bytes of bodies held at once (past each one's first request_bytes)
    client_body_budget: int = 8_000_000  #: bytes of bodies held at once from one client address
    body_stall: float = 2.0  #: seconds without a byte after which a body gives way to others
    send_timeout: float = 30.0  #: seconds in which a client takes SEND_PROGRESS bytes of the answers waiting
    connections: int = 1_000  #: connections open at once
    fd_reserve: int = 64  #: file descriptors kept for the server's own files
    backlog: int = 64  #: connections waiting to be accepted (and accepted in one burst)
    games: int = 128  #: games kept
    games_per_client: int = 16  #: games kept per client address
    own_idle: float = 60.0  #: seconds untouched after which a client's game gives way to its next
    idle: float = 600.0  #: seconds untouched after which any game gives way when the table is full
    done_idle: float = 10.0  #: seconds untouched after which a finished game gives way
    searches: int = 2  #: requests at once playing a search agent's moves
    search_wait: float = 1.0  #: seconds a request waits for a search slot
    log_interval: float = 10.0  #: seconds between two log lines of one kind

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, not {value!r}")


def connection_cap(limits: Limits, open_files: int | None = None) -> int:
    """The most connections the server keeps open: ``limits.connections``, less where the
    process may open only ``open_files`` files (default: its soft ``RLIMIT_NOFILE``), so that
    the connections, a burst of accepted ones and the server's own files fit. Raises
    ``ValueError`` if that leaves fewer than ``MIN_CONNECTIONS``."""
    if open_files is None:
        try:
            import resource
        except ImportError:  # not a POSIX system: no limit to read
            return limits.connections
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            return limits.connections
        open_files = soft
    cap = min(limits.connections, open_files - limits.fd_reserve - 2 * limits.backlog)
    if cap < MIN_CONNECTIONS:
        need = MIN_CONNECTIONS + limits.fd_reserve + 2 * limits.backlog
        raise ValueError(
            f"this process may open only {open_files} files (ulimit -n); the server needs at least {need}: "
            f"raise it (ulimit -n {max(need, 1024)})"
        )
    return cap


# ---------------------------------------------------------------------- connections


def _raw_answer(status: int, reason: str, detail: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, for a connection that has no
    request for h11 to answer."""
    body = json.dumps({"detail": detail}).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ] + ([f"retry-after: {retry_after}"] if retry_after is not None else [])
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head and on each answer its
    client does not read, and a cap on connections (the module docstring). Build a class for
    one server with :func:`protocol_class`."""

    limits: Limits = Limits()
    cap: int = Limits().connections
    #: The server's connections, the one that has waited longest on its client first
    #: (ordered by when each began to wait: opened, or answered).
    waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._send_waiting = 0  # bytes waiting for the client when the send deadline started
        self._wait()
        if len(self.connections) > self.cap:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop_head_timer()
        self._stop_send_timer()
        self.waiting.pop(self, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            self._watch_send()  # uvicorn closes it: the last bytes must go out in time
        else:
            self._wait()

    def timeout_keep_alive_handler(self) -> None:
        super().timeout_keep_alive_handler()
        if self.transport.is_closing():
            self._watch_send()

    def pause_writing(self) -> None:
        """The write buffer is full (the client is not reading): the send deadline starts."""
        super().pause_writing()
        self._watch_send()

    def resume_writing(self) -> None:
        """The client read enough of its answer: the deadline stops (unless closing)."""
        super().resume_writing()
        if not self.transport.is_closing():
            self._stop_send_timer()

    def _watch_send(self) -> None:
        """Start the send deadline (unless running): by then the client must have taken
        ``SEND_PROGRESS`` bytes of what waits for it now (or all of it)."""
        if self._send_timer is None:
            self._send_waiting = self.transport.get_write_buffer_size()
            self._send_timer = self.loop.call_later(self.limits.send_timeout, self._send_overdue)

    def _stop_send_timer(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _send_overdue(self) -> None:
        self._send_timer = None
        waiting = self.transport.get_write_buffer_size()
        if self._send_waiting - waiting >= min(SEND_PROGRESS, self._send_waiting):  # a slow reader, but reading
            self._watch_send()
            return
        limit = self.limits.send_timeout
        log.warning("dropped a connection whose client read too little of its answers for %g s", limit)
        self.connections.discard(self)
        self.waiting.pop(self, None)
        self._stop_head_timer()
        self.transport.abort()  # close() would wait for the unsent bytes to go out

    def _wait(self) -> None:
        """The connection begins to wait for a request head: its deadline starts now."""
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_overdue)
        self.waiting.pop(self, None)
        self.waiting[self] = None

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _waiting_on_client(self) -> bool:
        """Whether the connection waits for its client: no request head yet, or a body
        still coming (never one whose request is being answered)."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()

    def _head_overdue(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return  # a request is under way: its body has its own deadline
        if self.conn.trailing_data[0]:  # part of a head came: say why before closing
            limit = self.limits.header_timeout
            self.transport.write(_raw_answer(408, "Request Timeout", f"no complete request head within {limit:g} s"))
        log.warning("closed a connection that sent no complete request head within %g s", self.limits.header_timeout)
        self._close()

    def _close(self) -> None:
        self.connections.discard(self)
        self.waiting.pop(self, None)
        self._stop_head_timer()
        self.transport.close()
        self._watch_send()

    def _make_room(self) -> None:
        """Past the cap: close the connection that has waited longest on its client, or,
        if every other one is being answered, answer this one 503 and close it."""
        victim = next((c for c in self.waiting if c is not self and c._waiting_on_client()), None)
        if victim is not None:
            log.warning("at the cap of %d connections: closed the one waiting longest on its client", self.cap)
            victim._close()
            return
        log.warning("at the cap of %d connections, all being answered: refused a connection", self.cap)
        detail = f"the server is answering its most connections ({self.cap}) at once; try again in a moment"
        self.transport.write(_raw_answer(503, "Service Unavailable", detail, retry_after=1))
        self._close()


def protocol_class(limits: Limits, cap: int) -> type[GuardedH11Protocol]:
    """A protocol class for one server (uvicorn's ``http=``): its limits, its cap, its own
    list of connections."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits, "cap": cap, "waiting": OrderedDict()})


# ---------------------------------------------------------------------- bodies


@dataclass
class _Reading:
    """A body being read: its client's address, the bytes held, when its last bytes came
    (the loop's clock), whether it was stopped to make room for others."""

    owner: str = ""
    held: int = 0
    last: float = 0.0
    stopped: bool = False


#: Seconds between two looks of a waiting body at whether it was stopped.
POLL = 0.5


class BodyLimit:
    """ASGI middleware: a request's body is read whole before the app sees it, within the
    bounds of ``limits`` (the module docstring): over its size (``record_bytes`` for the
    paths in ``large_paths``, else ``request_bytes``) it is answered 413 as soon as the
    bytes received pass it (a ``Content-Length`` over it: before any is read), past its
    deadline 408; bodies held together stay within ``body_budget`` (a client's within
    ``client_body_budget``), stalled ones giving way (408) to bodies that come, and without
    one the new bytes are answered 503; nothing is read after a refusal, and the connection
    closes."""

    def __init__(self, app: Any, limits: Limits, large_paths: frozenset[str] = frozenset()):
        self.app, self.limits, self.large_paths = app, limits, large_paths
        self.held = 0  # bytes of the bodies being read or answered, together
        self.held_by: dict[str, int] = {}  # the same, by client address
        self.readings: dict[int, _Reading] = {}  # the bodies being read

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        limit = limits.record_bytes if scope["path"] in self.large_paths else limits.request_bytes
        size = dict(scope["headers"]).get(b"content-length")
        if size is not None and (not size.isdigit() or int(size) > limit):
            await _refuse(send, 413, f"request body over {limit} bytes")
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limits.body_timeout
        client = scope.get("client")
        reading = _Reading(owner=client[0] if client else "local", last=loop.time())
        self.readings[id(reading)] = reading
        chunks: list[bytes] = []
        received, more = 0, True
        try:
            while more:
                left = deadline - loop.time()
                if left <= 0:
                    log.warning("answered 408 to a request whose body did not come within %g s", limits.body_timeout)
                    await _refuse(send, 408, f"the request body did not arrive within {limits.body_timeout:g} s")
                    return
                try:
                    message = await asyncio.wait_for(receive(), min(left, POLL))
                except asyncio.TimeoutError:
                    message = None
                if reading.stopped:
                    detail = f"the request body stalled for {limits.body_stall:g} s while others needed room"
                    await _refuse(send, 408, detail)
                    return
                if message is None:
                    continue
                if message["type"] != "http.request":  # the client left
                    return
                chunk = message.get("body", b"")
                if received + len(chunk) > limit:
                    await _refuse(send, 413, f"request body over {limit} bytes")
                    return
                over_free = received + len(chunk) > limits.request_bytes
                if over_free and not self._room(len(chunk), reading, loop.time()):
                    if self._over(len(chunk), reading.owner)[0]:
                        budget, whose = limits.client_body_budget, "from this address "
                    else:
                        budget, whose = limits.body_budget, ""
                    log.warning("answered 503 to an upload: bodies held %sreached %d bytes", whose, budget)
                    detail = f"the server is receiving too many uploads {whose}at once; try again in a moment"
                    await _refuse(send, 503, detail, retry_after=1)
                    return
                received += len(chunk)
                reading.last = loop.time()
                self._hold(reading, len(chunk))
                chunks.append(chunk)
                more = message.get("more_body", False)
            del self.readings[id(reading)]
            first: dict | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            chunks.clear()

            async def replay() -> dict:
                nonlocal first
                if first is not None:
                    message, first = first, None
                    return message
                return await receive()

            await self.app(scope, replay, send)
        finally:
            self.readings.pop(id(reading), None)
            self._hold(reading, -reading.held)

    def _hold(self, reading: _Reading, size: int) -> None:
        """Count ``size`` more bytes (fewer if negative) held for ``reading``."""
        reading.held += size
        self.held += size
        mine = self.held_by.get(reading.owner, 0) + size
        if mine:
            self.held_by[reading.owner] = mine
        else:
            self.held_by.pop(reading.owner, None)

    def _over(self, size: int, owner: str) -> tuple[bool, bool]:
        """Whether ``size`` more bytes from ``owner`` would pass the budget: the client's, the whole."""
        mine = self.held_by.get(owner, 0) + size > self.limits.client_body_budget
        return mine, self.held + size > self.limits.body_budget

    def _room(self, size: int, reading: _Reading, now: float) -> bool:
        """Whether ``size`` more bytes of ``reading`` fit the budgets, after stopping bodies
        stalled for ``body_stall`` seconds as far as needed: the client's own first, the
        longest stalled first."""
        stalled = sorted(
            (
                r
                for r in self.readings.values()
                if r is not reading and not r.stopped and r.held and now - r.last >= self.limits.body_stall
            ),
            key=lambda r: (r.owner != reading.owner, r.last),
        )
        for other in stalled:
            mine, whole = self._over(size, reading.owner)
            if not (mine or whole) or (mine and other.owner != reading.owner):
                break  # room enough, or only the client's own bodies would make it
            other.stopped = True  # it answers 408 at its next look; its bytes count no more
            self._hold(other, -other.held)
            log.warning("stopped an upload stalled for %g s to make room for one that comes", self.limits.body_stall)
        return not any(self._over(size, reading.owner))


async def _refuse(send: Any, status: int, detail: str, retry_after: int | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(b"retry-after", str(retry_after).encode())] if retry_after is not None else []
    await send({"type": "http.response.start", "status": status, "headers": headers + [(b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------- the log


class OncePer(logging.Filter):
    """A logging filter that lets through one record of each kind per ``seconds`` (a kind:
    the logger, the message's first line before formatting, the exception's type and
    errno), as one line: the message's first line, then the exception's type and text,
    then how many of that kind were left out since the last one shown. The traceback is
    kept only for an exception that is not an ``OSError`` (a bug, not a client or a limit)."""

    #: Kinds remembered at once; past this, the expired ones are forgotten.
    MAX_KINDS = 1_000

    def __init__(self, seconds: float = 10.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.seconds, self.clock = seconds, clock
        self.kinds: dict[tuple, list] = {}  # kind -> [when the next may show, how many left out]
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        first = str(record.msg).split("\n", 1)[0]
        kind = (record.name, first[:200], type(error).__name__, getattr(error, "errno", None))
        now = self.clock()
        with self.lock:
            entry = self.kinds.get(kind)
            if entry is not None and now < entry[0]:
                entry[1] += 1
                return False
            left_out = entry[1] if entry is not None else 0
            if len(self.kinds) >= self.MAX_KINDS:
                self.kinds = {k: v for k, v in self.kinds.items() if v[0] > now}
            self.kinds[kind] = [now + self.seconds, 0]
        try:
            line = record.getMessage().split("\n", 1)[0]
        except (TypeError, ValueError):  # arguments that do not fit the message
            line = first
        if error is not None:
            text = str(error).replace("\n", " ")
            line += f" ({type(error).__name__}: {text[:200]})" if text else f" ({type(error).__name__})"
        if left_out:
            line += f" [and {left_out} more like it in the {self.seconds:g} s before]"
        record.msg, record.args = line, None
        if isinstance(error, OSError):
            record.exc_info, record.exc_text = None, None
        return True


#: The loggers a server's failures come to: asyncio's (accept() out of descriptors),
#: uvicorn's (invalid requests, errors in the app) and the table's own.
LOGGERS = ("asyncio", "uvicorn.error", "barbu_env.play.web")


def quiet_logs(seconds: float) -> OncePer:
    """Put one :class:`OncePer` on each of ``LOGGERS`` (once per process: a second call
    returns the first filter)."""
    for name in LOGGERS:
        for existing in logging.getLogger(name).filters:
            if isinstance(existing, OncePer):
                return existing
    once = OncePer(seconds)
    for name in LOGGERS:
        logging.getLogger(name).addFilter(once)
    return once


__all__ = [
    "LOGGERS",
    "MAX_RECORD_BYTES",
    "MAX_REQUEST_BYTES",
    "BodyLimit",
    "GuardedH11Protocol",
    "Limits",
    "OncePer",
    "connection_cap",
    "protocol_class",
    "quiet_logs",
]
