"""What ``eval``, ``league``, ``play`` and ``serve`` share: the ``--device`` and
``--trust-pickled`` options, and the agent specs with them applied.

``--trust-pickled`` adds ``trust=true`` to every agent file's spec (agent files in a
pickle-based format, SB3 ``.zip`` models and RLlib checkpoints, run code when loaded:
``docs/security.md``); ``--device`` adds ``device=...`` to every agent that takes one, and
plays in this process where it is not the CPU.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..util.argtypes import positive_int
from ..util.extras import require
from ..util.files import check_writable, quote

if TYPE_CHECKING:
    from ..agents.registry import AgentSpec

#: Where trained policies compute unless told otherwise: the tournament's workers are
#: processes sharing the cores, its batches are small (a job's games, step by step), and
#: the results do not depend on a GPU's arithmetic.
DEFAULT_DEVICE = "cpu"


def device(text: str) -> str:
    """A ``--device`` value: cpu, auto, cuda, cuda:N or mps (whether this machine has it is
    checked where a policy is placed)."""
    kind, colon, index = text.partition(":")
    if kind in ("cpu", "auto", "mps") and not colon or kind == "cuda" and (not colon or index.isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"must be cpu, auto, cuda, cuda:N or mps, not {quote(text)}")


def add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        type=device,
        default=DEFAULT_DEVICE,
        metavar="DEVICE",
        help="where trained policies compute (checkpoint agents, and pimc's rollout policy when it is one): "
        "cpu (default: worker processes share the cores, batches are small, results do not depend on the GPU), "
        "auto, cuda, cuda:N or mps; any other device than cpu plays in this process (--workers 1)",
    )


def add_table_options(p: argparse.ArgumentParser, workers: str) -> None:
    """What ``eval`` and ``league`` share: ``--rules``, ``--workers`` (``workers``: its help),
    ``--device``, ``--trust-pickled`` and ``--no-progress``."""
    p.add_argument("--rules", default="standard", metavar="PRESET", help="rules preset or YAML file (default standard)")
    p.add_argument("--workers", type=positive_int, metavar="W", help=workers)
    add_device(p)
    add_trust(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_trust(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust-pickled",
        action="store_true",
        help="allow agent files in a pickle-based format (SB3 .zip models, RLlib checkpoints): loading one runs "
        "code from it, so give this only for files you trust (adds trust=true to every agent file's spec; "
        "torch .pt checkpoints load safely without it; see docs/security.md)",
    )


def trusted(specs: list[AgentSpec], trust: bool) -> list[AgentSpec]:
    """The agent specs, with ``trust=true`` given to every agent file when ``trust``
    (``--trust-pickled``): the parameter travels in the spec, to tournament workers too.
    What a spec says itself wins."""
    return [s.with_param("trust", True) if trust and s.factory is None else s for s in specs]


def on_device(specs: list[AgentSpec], device: str, workers: int | None) -> tuple[list[AgentSpec], int | None]:
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


def agents_and_outputs(args: argparse.Namespace, specs: list[AgentSpec]) -> tuple[list[AgentSpec], int | None]:
    """For ``eval`` and ``league``, before any game: the agent specs with ``--trust-pickled``
    and ``--device`` applied, and the worker processes (``on_device``); ``--plot``'s extra
    and image format, and ``--out``/``--plot`` being writable checked."""
    if args.plot:
        require("matplotlib", "plot", "--plot")
        from ..evaluation.tournament.report import plot_format

        plot_format(args.plot)  # x.bad: refused now, not after every game
    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot")
    return on_device(trusted(specs, args.trust_pickled), args.device, args.workers)
