"""``barbu serve``: the browser table and replay viewer (``barbu_env.play.web``, the ``web``
extra). The socket is bound and listening before the address is announced; a bad host or a
port in use is one line before it."""

from __future__ import annotations

import argparse
import socket

from ..util.argtypes import nonnegative_int, port
from ..util.extras import require
from ..util.files import quote
from .agents import add_trust, trusted


def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "serve",
        help="the browser table: play against agents, replay records",
        description="A local web app: play a game against agents by clicking cards, and step through any game "
        "record trick by trick. Needs the web extra (pip install -e '.[web]').",
    )
    p.add_argument(
        "--agents",
        default="human,heuristic,heuristic,heuristic",
        metavar="A,B,C,D",
        help="the table: one human seat and three agents (names or checkpoint paths); default "
        "human,heuristic,heuristic,heuristic",
    )
    p.add_argument("--rules", default="standard", metavar="PRESET", help="rules preset name or YAML file")
    p.add_argument("--seed", type=nonnegative_int, help="seed of the games' deals and agents (default: random)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=8000, help="port (default 8000; 0: any free port)")
    add_trust(p)
    return p


def run(args: argparse.Namespace) -> int:
    require("fastapi", "web", "barbu serve")
    require("uvicorn", "web", "barbu serve")
    from ..agents import parse_agents
    from ..play.web.server import create_app, serve

    specs = [str(s) for s in trusted(parse_agents(args.agents), args.trust_pickled)]
    app = create_app(specs, rules=args.rules, seed=args.seed)
    # a bad host or a port in use: refused before the address is shown
    sock = _listening_socket(args.host, args.port, app.state.limits.backlog)
    port = sock.getsockname()[1]  # the one bound (--port 0: any free port)
    host, every = _shown_host(args.host, sock)
    where = f"; listening on every {every} address of this machine" if every else ""
    print(f"Barbu table at http://{host}:{port}/  (replays: http://{host}:{port}/replay{where})")
    serve(app, host=args.host, port=port, sock=sock)
    return 0


def _shown_host(host: str, sock: socket.socket) -> tuple[str, str | None]:
    """The host to put in the table's address (an IPv6 address in brackets, its zone as
    ``%25``), and, for a socket bound to every address (``0.0.0.0``, ``::``),
    which (``IPv4``, ``IPv6``, ``IPv4 and IPv6``): a browser on this machine is then shown
    the loopback address (no browser opens ``0.0.0.0``)."""
    import ipaddress

    address = ipaddress.ip_address(sock.getsockname()[0].split("%")[0])
    if address.is_unspecified and address.version == 4:
        return "127.0.0.1", "IPv4"
    if address.is_unspecified:
        v6only = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)
        return "[::1]", "IPv6" if v6only else "IPv4 and IPv6"
    return (f"[{host.replace('%', '%25')}]" if ":" in host else host), None


def _listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A socket listening on ``host:port`` (the first address the host resolves to), as
    uvicorn makes its own; ``OSError`` in one line if it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as e:
        raise OSError(f"--host {quote(host, 80)}: {e.strerror or e}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(backlog)  # a client that connects once the address is shown is taken
    except OSError as e:
        sock.close()
        raise OSError(f"cannot listen on {quote(host, 80)} port {port}: {e.strerror or e}") from None
    return sock
