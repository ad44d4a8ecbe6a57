"""``barbu play``: a game at the terminal against agents (``barbu_env.play.terminal``).

Ctrl-C stops the game only while an agent chooses (a human typing, a search thinking), so
the record written with ``--record`` is never half-updated: the game so far, marked
unfinished, and the exit status 130.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from ..util.argtypes import nonnegative_int, positive_int
from ..util.files import check_writable, quote
from .agents import add_trust, trusted
from .outputs import report_not_saved


def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
    p.add_argument("--seed", type=nonnegative_int, help="seed of the deals and the agents (default: random)")
    p.add_argument("--hands", type=positive_int, metavar="N", help="play only the first N hands")
    p.add_argument("--record", metavar="FILE.json", help="save the game record here")
    add_trust(p)
    return p


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..agents import make_agent, parse_agents
    from ..evaluation.records import GameRecord
    from ..game.constants import NUM_HANDS, NUM_PLAYERS
    from ..game.engine import BarbuState
    from ..game.rules import load_rules
    from ..play.terminal import HumanAgent, HumanQuit, play_at_terminal, seat_labels

    specs = [str(s) for s in trusted(parse_agents(args.agents), args.trust_pickled)]
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
