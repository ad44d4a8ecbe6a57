"""The ``barbu`` command line.

==============================================  ===============================================
command                                         what it does
==============================================  ===============================================
``barbu eval --agents A,B,C,D --games N``       duplicate tournament (``barbu_env/evaluation/tournament/``):
``[--seed S] [--rules R] [--out F.json]``       prints a table, writes JSON, a plot, game
``[--plot F.png] [--records DIR]``              records; trained policies compute on
``[--device D]``                                ``--device`` (cpu by default; league too)
``barbu league --agents A,B,C,... --games N``   every pair of agents in duplicate, three table
``[--seed S] [--rules R] [--cache DIR]``        formats each (``barbu_env/evaluation/league.py``): margin
``[--out F.json] [--plot F.png]``               matrix, ratings, JSON, heatmap; cached per
                                                pairing
``barbu replay FILE [--hand N ...]``            checks a game record by replaying it through
``[--video OUT.gif|OUT.mp4]``                   the environment, then prints it hand by hand
                                                (or draws it as a clip, ``barbu_env.view.frames``)
``barbu play --agents human,B,C,D``             a game at the terminal against agents
``[--hands N] [--record FILE]``                 (``barbu_env.play.terminal``)
``barbu serve [--agents ...] [--port P]``       the browser table and replay viewer
                                                (``barbu_env.play.web``, the ``web`` extra)
``barbu bench [...]``                           decisions per second (``benchmarks.bench``;
                                                its options pass through)
``barbu train --config F [--field V ...]``      self-play PPO (``training/train.py``; its options
                                                pass through)
``barbu exploit --target A [--decisions N]``    a best response to A trained and measured: a
                                                lower bound on A's exploitability
                                                (``training/exploit.py``; options pass through)
``barbu --version`` (``-V``)                    prints ``barbu`` and the installed version
                                                (``barbu_env.__version__``)
==============================================  ===============================================

Each command is a ``_add_<name>(subparsers)`` that declares its options and a
``_run_<name>(args)`` that does the work; ``COMMANDS`` registers them. Heavy modules
(numpy's users, pettingzoo, matplotlib, torch) are imported inside the run functions, so
that ``barbu --help`` answers at once. Only the command mains print; the library code
they call returns values and raises exceptions.

Outputs (``--out``, ``--plot``, ``--records``, ``--record``, ``--video``) are checked
before any work without touching the disk (``barbu_env.util.files.check_writable``), and
written whole or not at all (``barbu_env.util.files``) after the results are printed
(``barbu_env.cli.outputs``): one that cannot be written (a full disk) is one line,
``barbu CMD: not saved: ...`` naming the file, the old file is kept, and the exit status
is 1. Ctrl-C in ``play`` still writes the record of the game so far, marked unfinished.

Agent files in a pickle-based format (SB3 ``.zip`` models, RLlib checkpoints) run code
when loaded: ``eval``, ``league``, ``play`` and ``serve`` load them only with
``--trust-pickled``, which adds ``trust=true`` to every agent file's spec
(``docs/security.md``); without it the command prints why and exits with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..util.argtypes import OneLineParser, add_number, integer, port, positive_float, valid
from ..util.extras import MissingExtraError, require
from ..util.files import check_writable, error_line, make_folder, quote
from .outputs import report_not_saved, write_outputs

if TYPE_CHECKING:
    from barbu_env.agents.spec import AgentSpec

# ---------------------------------------------------------------------- eval


def _add_eval(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "eval",
        help="duplicate tournament of four agents",
        description="Duplicate tournament: every deal set (28 deals and the first declarer) is played in the "
        "four cyclic seatings, so each agent plays every deal from every seat. Prints a table of scores "
        "per game (s.e. and 95% CI over deal sets), per-contract means, doubling and head to head.",
    )
    p.add_argument(
        "--agents",
        required=True,
        metavar="A,B,C,D",
        help="four agents, comma-separated: registered names (random, heuristic, pimc, ...) or checkpoint "
        "paths, each with optional parameters after a colon; repeats allowed, e.g. "
        "pimc:worlds=32,heuristic,heuristic,heuristic",
    )
    p.add_argument(  # the tournament says why a number of games is refused
        "--games",
        type=integer,
        default=100,
        metavar="N",
        help=f"games to play, rounded up to a multiple of 4: {valid('eval', '--games')} (default 100)",
    )
    add_number(p, "eval", "--seed", "tournament seed: deals and agent seeds, {valid} (default 0)", default=0)
    p.add_argument(
        "--rules", default="standard", metavar="PRESET", help="rules preset name or YAML file (default standard)"
    )
    p.add_argument("--out", metavar="FILE.json", help="write the results as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the per-contract comparison (matplotlib)")
    p.add_argument("--records", metavar="DIR", help="save game records (JSON) in DIR: every game, or --record-games")
    add_number(p, "eval", "--record-games", "with --records: save only the first K games, {valid}", metavar="K")
    add_number(
        p,
        "eval",
        "--workers",
        "worker processes, {valid} (default: one per CPU; 1 plays in this process)",
        default=None,
        metavar="W",
    )
    _add_device(p)
    _add_trust(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


#: Where trained policies compute unless told otherwise: the tournament's workers are
#: processes sharing the cores, its batches are small (a job's games, step by step), and
#: the results do not depend on a GPU's arithmetic.
DEFAULT_DEVICE = "cpu"


def _device(text: str) -> str:
    """A ``--device`` value: cpu, auto, cuda, cuda:N or mps (whether this machine has it is
    checked where a policy is placed)."""
    kind, colon, index = text.partition(":")
    if kind in ("cpu", "auto", "mps") and not colon or kind == "cuda" and (not colon or index.isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"must be cpu, auto, cuda, cuda:N or mps, not {quote(text)}")


def _add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        type=_device,
        default=DEFAULT_DEVICE,
        metavar="DEVICE",
        help="where trained policies compute (checkpoint agents, and pimc's rollout policy when it is one): "
        "cpu (default: worker processes share the cores, batches are small, results do not depend on the GPU), "
        "auto, cuda, cuda:N or mps; any other device than cpu plays in this process (--workers 1)",
    )


def _add_trust(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust-pickled",
        action="store_true",
        help="allow agent files in a pickle-based format (SB3 .zip models, RLlib checkpoints): loading one runs "
        "code from it, so give this only for files you trust (adds trust=true to every agent file's spec; "
        "torch .pt checkpoints load safely without it; see docs/security.md)",
    )


def _trusted(specs: list[AgentSpec], trust: bool) -> list[AgentSpec]:
    """The agent specs, with ``trust=true`` given to every agent file when ``trust``
    (``--trust-pickled``): the parameter travels in the spec, to tournament workers too.
    What a spec says itself wins."""
    return [s.with_param("trust", True) if trust and s.factory is None else s for s in specs]


def _on_device(specs: list[AgentSpec], device: str, workers: int | None) -> tuple[list[AgentSpec], int | None]:
    """The agent specs with ``device`` given to every agent that takes one (what a spec
    says itself wins), and the worker processes. A device other than the CPU plays in this
    process: CUDA cannot be used in workers forked after it started here (and the
    tournament builds agents with parameters here first, to check them)."""
    from barbu_env.agents import agent_takes

    if device == DEFAULT_DEVICE:  # the loaders' own default: the specs stay as written
        return specs, workers
    placed = [s.with_param("device", device) if agent_takes(s, "device") else s for s in specs]
    if placed == specs:
        return specs, workers
    if workers not in (None, 1):
        raise ValueError(f"--device {device} plays in this process: leave out --workers {workers} (or give 1)")
    return placed, 1


def _agents_and_outputs(args: argparse.Namespace, specs: list[AgentSpec]) -> tuple[list[AgentSpec], int | None]:
    """For ``eval`` and ``league``, before any game: the agent specs with ``--trust-pickled``
    and ``--device`` applied, and the worker processes (``_on_device``); ``--plot``'s extra
    and image format, and ``--out``/``--plot`` being writable checked."""
    if args.plot:
        require("matplotlib", "plot", "--plot")
        from ..evaluation.tournament.report import plot_format

        plot_format(args.plot)  # x.bad: refused now, not after every game
    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot")
    return _on_device(_trusted(specs, args.trust_pickled), args.device, args.workers)


def _run_eval(args: argparse.Namespace) -> int:
    from barbu_env.agents import parse_agents
    from barbu_env.evaluation.tournament import evaluate, format_table, plot_results

    agents, workers = _agents_and_outputs(args, parse_agents(args.agents))
    make_folder(args.records, "--records")
    if args.record_games is not None and args.records is None:
        raise ValueError("--record-games needs --records DIR")
    result = evaluate(
        agents,
        games=args.games,
        seed=args.seed,
        rules=args.rules,
        workers=workers,
        progress=not args.no_progress,
        records_dir=args.records,
        record_games=args.record_games,
    )
    print(format_table(result))  # first: a file that cannot be written loses nothing of the table
    status = 0
    if result.run.get("records_not_saved"):
        report_not_saved("eval", result.run["records_not_saved"])
        status = 1
    writes = []
    if args.out:
        writes.append((lambda: result.to_json(args.out), f"\nresults written to {args.out}"))
    if args.plot:
        writes.append((lambda: plot_results(result, args.plot), f"plot written to {args.plot}"))
    return write_outputs("eval", writes) or status


# ---------------------------------------------------------------------- league


def _add_league(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "league",
        help="every pair of agents in duplicate: margin matrix and ratings",
        description="Play every pair {A, B} of the agents in three duplicate tournaments (A alone against three "
        "Bs, B alone against three As, and A,B,A,B), print the matrix of score margins per game with 95% "
        "intervals and one rating per agent (points per game, least squares over all pairings). Results are "
        "cached per pairing: adding an agent plays only its new pairings.",
    )
    p.add_argument(
        "--agents",
        required=True,
        metavar="A,B,C,...",
        help="two or more distinct agents, comma-separated: registered names or checkpoint paths, with optional "
        "parameters after a colon, e.g. random,heuristic,heuristic-cautious,pimc:worlds=16",
    )
    p.add_argument(
        "--games",
        type=integer,  # the league says why a number of games is refused
        default=100,
        metavar="N",
        help=f"games per format of each pairing, rounded up to a multiple of 4: {valid('league', '--games')} "
        "(default 100)",
    )
    add_number(p, "league", "--seed", "league seed: the deals of every tournament, {valid} (default 0)", default=0)
    p.add_argument(
        "--rules", default="standard", metavar="PRESET", help="rules preset name or YAML file (default standard)"
    )
    p.add_argument(
        "--cache",
        default="runs/league_cache",
        metavar="DIR",
        help="folder of cached pairing results (default runs/league_cache)",
    )
    p.add_argument("--no-cache", action="store_true", help="play everything and cache nothing")
    p.add_argument("--out", metavar="FILE.json", help="write the league as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the margin matrix as a heatmap (matplotlib)")
    add_number(
        p,
        "league",
        "--workers",
        "worker processes per tournament, {valid} (default: one per CPU; 1 plays in this process)",
        default=None,
        metavar="W",
    )
    _add_device(p)
    _add_trust(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _run_league(args: argparse.Namespace) -> int:
    from barbu_env.agents import parse_agents
    from barbu_env.evaluation.league import check_league_specs, format_league, plot_league, run_league
    from barbu_env.evaluation.tournament import check_agents

    agents, workers = _agents_and_outputs(args, parse_agents(args.agents))
    agents = check_league_specs(agents)  # two or more, none listed twice, before any agent is made
    check_agents(agents, args.rules)  # an agent no tournament could seat: refused before the first is played
    if not args.no_cache:
        make_folder(args.cache, "--cache")  # before the league, not after it
    result = run_league(
        agents,
        games=args.games,
        seed=args.seed,
        rules=args.rules,
        cache_dir=None if args.no_cache else args.cache,
        workers=workers,
        progress=not args.no_progress,
    )
    print(format_league(result))  # first: a file that cannot be written loses nothing of the table
    status = 0
    if result.cache_not_saved:
        report_not_saved("league", result.cache_not_saved)
        status = 1
    writes = []
    if args.out:
        writes.append((lambda: result.to_json(args.out), f"\nleague written to {args.out}"))
    if args.plot:
        writes.append((lambda: plot_league(result, args.plot), f"heatmap written to {args.plot}"))
    return write_outputs("league", writes) or status


# ---------------------------------------------------------------------- replay


def _add_replay(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        help="check a game record and print it hand by hand",
        description="Replay a game record's actions through the environment on its deals, check that every "
        "hand result and the final scores come out as recorded, and print the game hand by hand.",
    )
    p.add_argument("file", metavar="FILE", help="a game record (JSON), e.g. from barbu eval --records")
    add_number(p, "replay", "--hand", "print only hand N, {valid}; repeatable", action="append", metavar="N")
    p.add_argument("--no-check", action="store_true", help="print without replaying through the environment first")
    p.add_argument(
        "--video",
        metavar="OUT.gif|OUT.mp4",
        help="draw the game (or the --hand hands) as a clip instead of printing it; MP4 needs the video extra",
    )
    p.add_argument(
        "--every",
        choices=("trick", "card"),
        default="trick",
        help="with --video: a frame per completed trick (default) or per card",
    )
    p.add_argument(
        "--fps",
        type=_fps,
        default=2.0,
        help="with --video: frames per second, 0.1 (a frame every ten seconds) to 50 (default 2)",
    )
    p.add_argument("--seat", type=int, choices=range(4), default=0, help="with --video: the seat drawn at the bottom")
    return p


def _fps(text: str) -> float:
    """A ``--fps`` value: a number in ``barbu_env.view.frames.FPS_RANGE``."""
    from ..view.frames import check_fps

    try:
        return check_fps(positive_float(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _run_replay(args: argparse.Namespace) -> int:
    from ..evaluation.records import GameRecord, render_record, replay_record

    record = GameRecord.load(args.file)
    if not args.no_check:
        hands, _ = replay_record(record)
    if args.video:
        check_writable(args.video, "--video")  # before drawing the frames
        return _write_replay_video(record, args)
    print(render_record(record, hands=args.hand))
    if not args.no_check:
        scores = "the final scores" if record.finished else "the scores of an unfinished game"
        print(f"Replayed through barbu_env.env(): {len(hands)} hand results and {scores} match the record.")
    return 0


def _write_replay_video(record, args: argparse.Namespace) -> int:
    import numpy as np

    from ..game.engine import BarbuState
    from ..view.frames import record_frames, write_video

    state = BarbuState.new_game(
        record.rules_obj(), rng=np.random.default_rng(0), first_declarer=record.first_declarer, deals=record.deals
    )
    frames = record_frames(state, record.actions, record.agents, viewer=args.seat, every=args.every, hands=args.hand)
    count = write_video(frames, args.video, fps=args.fps)
    print(f"{count} frames written to {args.video}")
    return 0


# ---------------------------------------------------------------------- play


def _add_play(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "play",
        help="play a game at the terminal against agents",
        description="Sit at the table: 'human' seats are asked at the terminal (cards as QH or 10S, contracts "
        "and doubles by name or number, ? lists the choices, quit stops), the others are agents. Every action "
        "is announced; --record saves the game (finished or not) for barbu replay or the browser viewer.",
    )
    p.add_argument(
        "--agents",
        default="human,heuristic,heuristic,heuristic",
        metavar="A,B,C,D",
        help="four seats, comma-separated: human, registered agent names or checkpoint paths "
        "(default human,heuristic,heuristic,heuristic)",
    )
    p.add_argument("--rules", default="standard", metavar="PRESET", help="rules preset name or YAML file")
    add_number(p, "play", "--seed", "seed of the deals and the agents, {valid} (default: random)", default=None)
    add_number(p, "play", "--hands", "play only the first N hands, {valid}", default=None, metavar="N")
    p.add_argument("--record", metavar="FILE.json", help="save the game record here")
    _add_trust(p)
    return p


def _run_play(args: argparse.Namespace) -> int:
    import numpy as np

    from ..agents import make_agent, parse_agents
    from ..evaluation.records import GameRecord
    from ..game.constants import NUM_HANDS, NUM_PLAYERS
    from ..game.engine import BarbuState
    from ..game.rules import load_rules
    from ..play.terminal import HumanAgent, HumanQuit, play_at_terminal, seat_labels

    specs = [str(s) for s in _trusted(parse_agents(args.agents), args.trust_pickled)]
    if len(specs) != NUM_PLAYERS:
        raise ValueError(f"--agents needs {NUM_PLAYERS} seats, got {len(specs):,}: {quote(specs, 200)}")
    if "human" in specs and (sys.stdin is None or sys.stdin.closed):
        raise ValueError("standard input is closed: a human seat reads its moves from it (or seat four agents)")
    check_writable(args.record, "--record")  # before the game, not after it
    rules = load_rules(args.rules)
    labels = seat_labels(specs)
    seeds = np.random.SeedSequence(args.seed)
    game_seed, *agent_seeds = seeds.spawn(NUM_PLAYERS + 1)
    agents = [
        HumanAgent(labels=labels, rules=rules)
        if spec == "human"
        else make_agent(spec, seed=int(s.generate_state(1)[0]), rules=rules)
        for spec, s in zip(specs, agent_seeds)
    ]
    state = BarbuState.new_game(rules, np.random.default_rng(game_seed))
    hands = args.hands or NUM_HANDS
    stopped = None  # or why the game stopped before it was played out
    try:
        with _interrupts_between_moves(agents) as seated:
            play_at_terminal(seated, labels, hands=hands, write=print, state=state)
    except HumanQuit:
        stopped = "quit"
        print("Game stopped.")
    except KeyboardInterrupt:  # Ctrl-C: the game so far is still recorded
        stopped = "interrupted"
    status = 130 if stopped == "interrupted" else 0
    if args.record:
        metadata = {"source": "barbu play", "seed": args.seed, "entropy": str(seeds.entropy)}
        finished = state.is_terminal or len(state.results) >= hands
        if not finished:
            metadata["stopped"] = stopped
        record = GameRecord.from_state(state, agents=labels, metadata=metadata, finished=finished)
        try:
            record.save(args.record)
        except OSError as e:
            report_not_saved("play", e)
            status = status or 1
        else:
            kind = "" if finished else ", unfinished"
            print(f"record written to {args.record} ({len(state.results)} hands{kind})")
    if stopped == "interrupted":
        print("barbu play: interrupted", file=sys.stderr)
    return status


class _Interruptible:
    """An agent whose ``act`` may be interrupted by Ctrl-C (see ``_interrupts_between_moves``)."""

    def __init__(self, agent, gate: dict[str, bool]) -> None:
        self.agent, self.gate = agent, gate

    def act(self, observation, agent=None):
        if self.gate["pending"]:  # a Ctrl-C while the last action was applied: it stops the game now
            self.gate["pending"] = False
            raise KeyboardInterrupt
        self.gate["choosing"] = True
        try:
            return self.agent.act(observation, agent)
        finally:
            self.gate["choosing"] = False


@contextlib.contextmanager
def _interrupts_between_moves(agents: Sequence) -> Iterator[list]:
    """The agents, wrapped so that Ctrl-C stops the game only while an agent chooses (a
    human typing, a search thinking): one that comes while an action is being applied
    waits for the next choice, so the state recorded is never half-updated. Outside the
    main thread (where no handler can be set), or where Ctrl-C is ignored, the agents as
    they are."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield list(agents)
        return
    gate = {"choosing": False, "pending": False}

    def on_interrupt(signum, frame) -> None:
        if gate["choosing"]:
            raise KeyboardInterrupt
        gate["pending"] = True

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield [_Interruptible(a, gate) for a in agents]
        if gate["pending"]:  # after the last action
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)


# ---------------------------------------------------------------------- serve


def _add_serve(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
    add_number(p, "serve", "--seed", "seed of the games' deals and agents, {valid} (default: random)", default=None)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument(
        "--port", type=port, default=8000, help=f"port, {valid('serve', '--port')} (default 8000; 0: any free port)"
    )
    _add_trust(p)
    return p


def _run_serve(args: argparse.Namespace) -> int:
    require("fastapi", "web", "barbu serve")
    require("uvicorn", "web", "barbu serve")
    from ..agents import parse_agents
    from ..play.web.server import create_app, serve, uvicorn_config

    specs = [str(s) for s in _trusted(parse_agents(args.agents), args.trust_pickled)]
    app = create_app(specs, rules=args.rules, seed=args.seed)
    uvicorn_config(app, args.host, args.port)  # a file limit too low for the connection cap: refused before the address
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
    ``%25``), and, for a socket bound to every address (``0.0.0.0``, ``::``, ``::ffff:0.0.0.0``),
    which (``IPv4``, ``IPv6``, ``IPv4 and IPv6``): a browser on this machine is then shown
    the loopback address (no browser opens ``0.0.0.0``)."""
    import ipaddress

    address = ipaddress.ip_address(sock.getsockname()[0].split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None and mapped.is_unspecified:
        return "127.0.0.1", "IPv4"
    if address.is_unspecified and address.version == 4:
        return "127.0.0.1", "IPv4"
    if address.is_unspecified:
        v6only = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)
        return "[::1]", "IPv6" if v6only else "IPv4 and IPv6"
    return (f"[{host.replace('%', '%25')}]" if ":" in host else host), None


def _listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A socket listening on ``host:port`` (the first address the host resolves to), as
    uvicorn makes its own, that a client on this machine has connected to; ``OSError`` or
    ``ValueError`` in one line if it cannot be (a multicast or broadcast address neither,
    written as IPv4 or as IPv6-mapped IPv4)."""
    import ipaddress

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except UnicodeError:
        raise ValueError(f"--host {quote(host, 80)} is not a host name or address") from None
    except OSError as e:
        raise OSError(f"--host {quote(host, 80)}: {e.strerror or e}") from None
    ip = ipaddress.ip_address(address[0].split("%")[0])
    ip = getattr(ip, "ipv4_mapped", None) or ip  # ::ffff:224.0.0.1 is 224.0.0.1
    if ip.is_multicast or ip == ipaddress.IPv4Address("255.255.255.255"):
        raise ValueError(f"--host {quote(host, 80)} is a multicast or broadcast address: no browser can connect to it")
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(backlog)  # a client that connects once the address is shown is taken
    except OSError as e:
        sock.close()
        raise OSError(f"cannot listen on {quote(host, 80)} port {port}: {e.strerror or e}") from None
    try:
        _connect_once(sock)
    except OSError as e:  # an address one can bind and not reach: a subnet's broadcast address
        sock.close()
        raise OSError(f"--host {quote(host, 80)}: nothing connects to it ({e.strerror or e})") from None
    return sock


def _connect_once(sock: socket.socket, timeout: float = 2.0) -> None:
    """Connect to a listening socket's address from this machine (its loopback address
    where it listens on every address), then hang up; ``OSError`` if that fails."""
    import ipaddress

    address = sock.getsockname()
    if ipaddress.ip_address(address[0].split("%")[0]).is_unspecified:
        address = ("127.0.0.1" if sock.family == socket.AF_INET else "::1", *address[1:])
    with socket.socket(sock.family, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        probe.connect(address)


# ---------------------------------------------------------------------- bench and train


def _pass_through(name: str, module: str, help: str) -> Callable[[argparse._SubParsersAction], argparse.ArgumentParser]:
    """A subcommand whose options all go to ``module``'s own parser (``barbu NAME --help``
    shows them)."""

    def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help,
            add_help=False,
            description=f"Runs python -m {module}; every option after '{name}' is passed to it.",
        )

    return add


def _run_bench(argv: Sequence[str]) -> int:
    checkout = _checkout_with_benchmarks()
    if checkout is not None and checkout not in sys.path:  # the console script's path lacks it
        sys.path.insert(0, checkout)
    try:
        from benchmarks import bench
    except ImportError:
        raise SystemExit(
            "barbu bench runs from a checkout of the repository (benchmarks/ is not in the wheel): "
            "cd into the clone, then barbu bench (or python -m benchmarks.bench)"
        ) from None

    return bench.main(list(argv), prog="barbu bench")


def _checkout_with_benchmarks() -> str | None:
    """The working folder or the nearest folder above it that is a checkout of barbu: it
    holds ``benchmarks/bench.py`` and a ``pyproject.toml`` of the project ``barbu``; None
    if there is none (another project's benchmarks are never run)."""
    import tomllib

    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "benchmarks" / "bench.py").is_file() and (folder / "pyproject.toml").is_file():
            try:
                name = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if name == "barbu":
                return str(folder)
    return None


#: What a training run imports from the ``train`` extra (TensorBoard logs, the learning
#: curve): checked before it starts, not when it ends.
TRAIN_MODULES = ("torch", "tensorboard", "matplotlib")


def _run_train(argv: Sequence[str]) -> int:
    for module in TRAIN_MODULES:
        require(module, "train", "barbu train")
    from barbu_training import train

    return train.main(list(argv))


def _run_exploit(argv: Sequence[str]) -> int:
    for module in TRAIN_MODULES:
        require(module, "train", "barbu exploit")
    from barbu_training import exploit

    return exploit.main(list(argv))


# ---------------------------------------------------------------------- the command

#: name -> (declare the subcommand, run it). ``bench``, ``train`` and ``exploit`` pass their arguments through.
COMMANDS: dict[str, tuple[Callable, Callable]] = {
    "eval": (_add_eval, _run_eval),
    "league": (_add_league, _run_league),
    "replay": (_add_replay, _run_replay),
    "play": (_add_play, _run_play),
    "serve": (_add_serve, _run_serve),
    "bench": (
        _pass_through("bench", "benchmarks.bench", "decisions per second of the engine and the environment"),
        _run_bench,
    ),
    "train": (
        _pass_through("train", "barbu_training.train", "self-play PPO training (--config configs/train/quick.yaml)"),
        _run_train,
    ),
    "exploit": (
        _pass_through(
            "exploit",
            "barbu_training.exploit",
            "a best response to an agent, trained and measured (--target heuristic)",
        ),
        _run_exploit,
    ),
}
#: Commands whose arguments are handed on untouched to another program's parser.
PASS_THROUGH = ("bench", "train", "exploit")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="barbu",
        description="Barbu, the four-player card game, as an RL environment: evaluate agents, replay games, "
        "measure speed.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"barbu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``barbu`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASS_THROUGH:  # their mains report their own errors
        try:
            return COMMANDS[argv[0]][1](argv[1:])
        except MissingExtraError as e:  # an extra is not installed: the line that says which
            print(error_line(f"barbu {argv[0]}: error: {e}"), file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # outside the training loop (which saves and reports): loading, final evaluation
            print(f"barbu {argv[0]}: interrupted", file=sys.stderr)
            return 130
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, OSError, MissingExtraError) as e:  # bad agents, rules, records or paths, or
        # a feature whose extra is not installed: a message, not a traceback, on one line
        print(error_line(f"barbu {args.command}: error: {e}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"barbu {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
