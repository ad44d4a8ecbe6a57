"""What a client may hold of the browser table's server (``barbu serve``), all in one :class:`Limits`.

uvicorn's own settings bound the connections and the request head, FastAPI's the bodies;
:class:`Protocol` adds the one bound uvicorn lacks, a deadline on the client:

=====================  ================================================================
bound                  what happens past it (defaults in parentheses)
=====================  ================================================================
request head           at most ``head_bytes`` (16 kB; uvicorn's
                       ``h11_max_incomplete_event_size``), else 400
request body           at most ``record_bytes`` (2 MB) for a record upload and
                       ``request_bytes`` (16 kB) for any other request (FastAPI's
                       ``max_body_size``), else 413: a ``Content-Length`` over it before
                       any byte is read, a body without one as soon as it passes it
the client             within ``client_timeout`` (20 s) of the connection opening or of
                       its last answer, the client has sent a whole request (head and
                       body) and read its answers, else the connection is dropped;
                       an idle kept-alive connection closes after ``keep_alive`` (5 s;
                       uvicorn's ``timeout_keep_alive``)
connections            at most ``connections`` (64; uvicorn's ``limit_concurrency``):
                       a new connection past it drops the one that has waited longest on
                       its client (for a request, a body or the reading of its answers);
                       a request while every connection is being answered is answered
                       503 (uvicorn); at most ``backlog`` (16) are accepted at a
                       time, so descriptors stay under ``connections`` plus three
                       times ``backlog`` plus a few (asyncio closes a dropped one and
                       starts an accepted one a loop turn later): 256 files suffice
games                  ``games_per_client`` (16) per client address, ``games`` (128) in all:
                       a game untouched for ``own_idle`` (60 s), ``idle`` (10 min) or, once
                       over, ``done_idle`` (10 s) gives way, else 429 or 503
                       (``barbu_env.play.web.games.Games``)
searches               at most ``searches`` (2) requests at once play a search agent's
                       moves; another waits up to ``search_wait`` (1 s), then is answered
                       503, its game unchanged (``barbu_env.play.web.server``)
=====================  ================================================================

So a body held in memory is at most ``connections`` times ``record_bytes`` (128 MB) at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: The largest record upload (a whole game's record is about 25 kB).
MAX_RECORD_BYTES = 2_000_000
#: The largest body of any other request (a new game's or an action's is under 200 bytes).
MAX_REQUEST_BYTES = 16_384


@dataclass(frozen=True)
class Limits:
    """The server's bounds (see the module docstring)."""

    client_timeout: float = 20.0  #: seconds for each whole request and for reading the answers
    keep_alive: int = 5  #: seconds an idle kept-alive connection stays open
    connections: int = 64  #: connections open at once
    backlog: int = 16  #: connections waiting to be accepted
    head_bytes: int = 16_384  #: the largest request head
    request_bytes: int = MAX_REQUEST_BYTES  #: the largest body but a record's
    record_bytes: int = MAX_RECORD_BYTES  #: the largest record upload
    games: int = 128  #: games kept
    games_per_client: int = 16  #: games kept per client address
    own_idle: float = 60.0  #: seconds untouched after which a client's game gives way to its next
    idle: float = 600.0  #: seconds untouched after which any game gives way when the table is full
    done_idle: float = 10.0  #: seconds untouched after which a finished game gives way
    searches: int = 2  #: requests at once playing a search agent's moves
    search_wait: float = 1.0  #: seconds a request waits for a search slot


class Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on the client and room made at the cap (the
    module docstring); ``limits`` is set per server (``server.uvicorn_config``)."""

    limits = Limits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_deadline()
        if len(self.connections) >= self.limit_concurrency:
            waiting = [c for c in self.connections if c is not self and c.waiting()]
            if waiting:
                victim = min(waiting, key=lambda c: c.deadline.when())
                self.connections.discard(victim)  # now, not when the loop gets to its end: room for this one
                victim.transport.abort()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._start_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.deadline.cancel()

    def waiting(self) -> bool:
        """Whether the connection waits on its client: for a request, for the rest of a
        body, or to read its answers."""
        idle = self.cycle is None or self.cycle.response_complete
        return idle or self.conn.their_state is h11.SEND_BODY or self.flow.write_paused

    def _start_deadline(self) -> None:
        if getattr(self, "deadline", None) is not None:
            self.deadline.cancel()
        self.deadline = self.loop.call_later(self.limits.client_timeout, self._overdue)

    def _overdue(self) -> None:
        if self.waiting():  # else the app is still answering: the answer starts a new deadline
            self.transport.abort()  # close() would wait for the unread answers to go out
