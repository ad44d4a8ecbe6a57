"""The numbers a user gives, and what they may be: every numeric option of the command
lines (``FLAGS``) and every numeric parameter of an agent spec (``AGENT_PARAMS``), each a
:class:`Range` written once here. The parsers take their types from it (``number``), the
options' ``--help`` says it (``Range.describe``), the agents check their parameters with
it before any work, and docs/security.md and docs/agents.md show it as a table
(``ranges_table``, checked against this module by ``tests/test_bounded_input.py``). A value
outside its range is refused in one line naming the option or parameter, the range, and the
value (quoted in at most 40 characters). Upper bounds keep a command inside what a machine
can hold and finish: memory and time grow with them (why each is where it is: its ``why``).

Besides: argument types for the remaining options, each turning the option's text into its
value or raising ``argparse.ArgumentTypeError`` with the reason, which argparse prints as
one line (``OneLineParser``) naming the option.

>>> positive_int("3"), nonnegative_int("0"), positive_float("0.5"), port("8000")
(3, 0, 0.5, 8000)
>>> positive_int("0")
Traceback (most recent call last):
argparse.ArgumentTypeError: must be a positive integer, not '0'
>>> number("eval", "--seed")("-1")
Traceback (most recent call last):
argparse.ArgumentTypeError: must be an integer from 0 to 4,294,967,295, not '-1'
>>> AGENT_PARAMS["pimc"]["worlds"].check(10**9, "pimc: worlds")
Traceback (most recent call last):
ValueError: pimc: worlds must be an integer from 1 to 4,096, not 1000000000
"""

from __future__ import annotations

import argparse
import math
import numbers
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from .files import error_line, quote


def _number(x: float) -> str:
    x = int(x) if float(x).is_integer() else x
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


@dataclass(frozen=True)
class Range:
    """The valid values of a number: from ``low`` to ``high`` (both included, but ``low``
    excluded if ``above``), an integer if ``integer`` (a bool is no number, and a float is no
    integer, even 3.0), else any finite number (an int is a number too). ``why``: what grows
    with it, for the docs' table."""

    low: float
    high: float
    integer: bool = True
    above: bool = False
    why: str = ""

    def describe(self) -> str:
        """The valid values in words: ``an integer from 1 to 4,096``, ``a number above 0, at most 3,600``."""
        if self.integer:
            return f"an integer from {_number(self.low)} to {_number(self.high)}"
        if self.above:
            return f"a number above {_number(self.low)}, at most {_number(self.high)}"
        return f"a number from {_number(self.low)} to {_number(self.high)}"

    def holds(self, value: object) -> bool:
        """Whether ``value`` is one of the valid values (of the right kind, in range)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.integer and not isinstance(value, numbers.Integral):
            return False
        try:
            if not math.isfinite(value):
                return False
        except OverflowError:  # an integer past float's range: outside every range here
            return False
        return (value > self.low if self.above else value >= self.low) and value <= self.high

    def check(self, value: object, name: str) -> int | float:
        """``value`` (an int, or a float for a number) if it holds; else a ``ValueError``
        ``NAME must be RANGE, not VALUE``."""
        if not self.holds(value):
            raise ValueError(f"{name} must be {self.describe()}, not {quote(value)}")
        return int(value) if self.integer else float(value)

    def parse(self, text: str) -> int | float:
        """An option's text as its value, or ``argparse.ArgumentTypeError`` saying the range."""
        try:
            value: float = int(text) if self.integer else float(text)
        except ValueError:  # not a number (or an int of over 4,300 digits)
            value = math.nan
        if not self.holds(value):
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, not {quote(text)}")
        return value


# ---------------------------------------------------------------------- the table

#: Seeds: numpy's and torch's generators take any of these (the training config's seeds too).
SEED = Range(0, 2**32 - 1, why="a seed of numpy's and torch's generators")
#: Games of a tournament: ``barbu_env.evaluation.tournament.schedule.MAX_GAMES`` (each game's results
#: stay in memory until the statistics are taken).
GAMES = Range(1, 10_000_000, why="every game's results stay in memory, about 10 KB a game")
#: Worker processes of a tournament: each holds its agents.
WORKERS = Range(1, 1024, why="each worker process holds its own agents")
#: Hands of a game (``--hand``, ``--hands``).
HANDS = Range(1, 28, why="a game has 28 hands")
#: pimc's worlds per decision: the search's time grows with them (memory does not: its
#: rollouts are played in rounds of a bounded number of games).
WORLDS = Range(1, 4096, why="time per decision: about 5 s a decision at 4,096 on one core")

#: The vector environment's benchmark, a command of its own (not a ``barbu`` subcommand).
VECTOR_BENCH = "python -m benchmarks.bench_vector_env"

#: Every numeric option: (command, option) -> its range. ``barbu eval``'s and ``barbu
#: league``'s ``--games`` are checked by the tournament (``check_games``) with this range.
FLAGS: dict[tuple[str, str], Range] = {
    ("eval", "--games"): GAMES,
    ("eval", "--seed"): SEED,
    ("eval", "--record-games"): Range(0, GAMES.high, why="at most every game of the tournament"),
    ("eval", "--workers"): WORKERS,
    ("league", "--games"): GAMES,
    ("league", "--seed"): SEED,
    ("league", "--workers"): WORKERS,
    ("replay", "--hand"): HANDS,
    ("replay", "--fps"): Range(
        0.1, 50, integer=False, why="frames of a clip (barbu_env.view.frames.FPS_RANGE checks it)"
    ),
    ("play", "--seed"): SEED,
    ("play", "--hands"): HANDS,
    ("serve", "--seed"): SEED,
    ("serve", "--port"): Range(0, 65535, why="a TCP port (0: any free one)"),
    ("bench", "--seconds"): Range(0, 3600, integer=False, above=True, why="time per subject"),
    ("bench", "--games"): Range(1, 1_000_000, why="time per subject"),
    ("bench", "--seed"): SEED,
    ("bench", "--batch"): Range(1, 16_384, why="memory: about 15 KB a game (250 MB at the most)"),
    ("bench", "--pin-core"): Range(0, 999_999, why="a core number (one this process may use: checked)"),
    ("bench", "--pimc-games"): Range(0, 1000, why="time: one game after another"),
    ("bench", "--pimc-worlds"): WORLDS,
    ("exploit", "--decisions"): Range(1, 10**15, why="time (the training config's total_decisions)"),
    ("exploit", "--games"): GAMES,
    ("exploit", "--seed"): SEED,
    ("exploit", "--eval-seed"): SEED,
    (VECTOR_BENCH, "--seconds"): Range(0, 3600, integer=False, above=True, why="time per subject"),
    (VECTOR_BENCH, "--envs"): Range(1, 16_384, why="memory: a game and its opponents per sub-environment"),
    (VECTOR_BENCH, "--async-envs"): Range(0, 1024, why="one process per sub-environment"),
    (VECTOR_BENCH, "--seed"): SEED,
}

#: Probabilities of ``pimc``'s prior (``cover``, ``certain``).
_SHARE = Range(0, 1, integer=False, above=True, why="a probability")
#: The heuristics' doubling margins, in points of a hand: past either end, always or never.
_MARGIN = Range(-1000, 1000, integer=False, why="points of a hand (past either end: always or never)")
_PIMC = {
    "worlds": WORLDS,
    "time_limit": Range(0, 3600, integer=False, above=True, why="seconds per decision"),
    "cover": _SHARE,
    "certain": _SHARE,
}

#: Every numeric parameter of a registered agent: agent -> parameter -> its range. The
#: agents check them (``Range.check``) before they build anything.
AGENT_PARAMS: dict[str, dict[str, Range]] = {
    "pimc": _PIMC,
    "pimc-ppo": _PIMC,
    "openspiel-ismcts": {
        "simulations": Range(1, 100_000, why="time and the search tree's memory per decision"),
        "uct_c": Range(0, 1000, integer=False, why="the exploration constant"),
        "rollouts": Range(1, 100, why="time per simulation"),
    },
    "heuristic": {"double_margin": _MARGIN, "redouble_margin": _MARGIN},
    "heuristic-cautious": {"double_margin": _MARGIN, "redouble_margin": _MARGIN},
}


def number(command: str, option: str) -> Callable[[str], int | float]:
    """The argparse type of ``command``'s numeric ``option`` (``FLAGS``)."""
    return FLAGS[(command, option)].parse


def valid(command: str, option: str) -> str:
    """``option``'s valid values in words, for its ``--help``."""
    return FLAGS[(command, option)].describe()


def add_number(parser: argparse.ArgumentParser, command: str, option: str, help: str, **kwargs: Any) -> None:
    """Add ``command``'s numeric ``option`` to ``parser``: its type and its valid values
    from ``FLAGS`` (named once), ``{valid}`` in ``help`` replaced by the values in words."""
    parser.add_argument(
        option, type=number(command, option), help=help.replace("{valid}", valid(command, option)), **kwargs
    )


def ranges_table(rows: dict[tuple[str, str], Range], heads: tuple[str, str]) -> str:
    """``rows`` as a Markdown table (the docs pages show ``FLAGS`` and ``AGENT_PARAMS`` so)."""
    lines = [f"| {heads[0]} | {heads[1]} | valid values | bounded by |", "|---|---|---|---|"]
    lines += [f"| `{a}` | `{b}` | {r.describe()} | {r.why} |" for (a, b), r in rows.items()]
    return "\n".join(lines) + "\n"


def flags_table() -> str:
    """``FLAGS`` as docs/security.md shows it."""
    return ranges_table({(c if " " in c else f"barbu {c}", o): r for (c, o), r in FLAGS.items()}, ("command", "option"))


def agent_params_table() -> str:
    """``AGENT_PARAMS`` as docs/agents.md and docs/security.md show it."""
    rows = {(agent, p): r for agent, params in AGENT_PARAMS.items() for p, r in params.items()}
    return ranges_table(rows, ("agent", "parameter"))


# ---------------------------------------------------------------------- other options


#: The most digits an integer option or spec value may have (Python's own limit on reading an int).
MAX_DIGITS = 4300


def too_many_digits(text: str) -> int | None:
    """How many digits ``text`` has if it is an integer too long to read (over
    ``MAX_DIGITS``), else None."""
    digits = sum(c.isdigit() for c in text)
    return digits if digits > MAX_DIGITS and re.fullmatch(r"\s*[+-]?[\d_]+\s*", text) else None


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        digits = too_many_digits(text)
        if digits is not None:
            raise argparse.ArgumentTypeError(
                f"must be {what} of at most {MAX_DIGITS:,} digits, not {digits:,}"
            ) from None
        raise argparse.ArgumentTypeError(f"must be {what}, not {quote(text)}") from None


def integer(text: str) -> int:
    """Any integer (a count whose range its command checks and explains, such as ``--games``)."""
    return _int(text, "an integer")


def positive_int(text: str) -> int:
    """An integer of at least 1 (games, workers, worlds, a batch size)."""
    n = _int(text, "a positive integer")
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {quote(text)}")
    return n


def nonnegative_int(text: str) -> int:
    """An integer of at least 0 (a seed, a count that may be none)."""
    n = _int(text, "an integer of at least 0")
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 0, not {quote(text)}")
    return n


#: The numbers a float holds, as a refusal says them.
FLOAT_RANGE = f"a number within ±{sys.float_info.max:.2g}"


def read_as_infinity(text: str, x: float) -> bool:
    """Whether ``float(text)`` gave ``x`` infinite for a number too large (``1e400``, 5,000
    nines), not for one written as infinity."""
    return math.isinf(x) and "inf" not in text.lower()


def any_number(text: str) -> float:
    """Any number a float holds (a field whose range its check explains): ``1e400`` or 5,000
    nines are refused for their size, not read as infinity."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {quote(text)}") from None
    if read_as_infinity(text, x):
        raise argparse.ArgumentTypeError(f"must be {FLOAT_RANGE}, not {quote(text, 24)}")
    return x


def positive_float(text: str) -> float:
    """A finite number above 0 (seconds, frames per second)."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {quote(text)}")
    return x


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    return FLAGS[("serve", "--port")].parse(text)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, ``PROG: error: MESSAGE
    (PROG --help lists the options)``, exit status 2; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        message = error_line(message, 600)  # argparse quotes what it was given: a long value is cut
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the options)\n")


__all__ = [
    "AGENT_PARAMS",
    "VECTOR_BENCH",
    "FLAGS",
    "OneLineParser",
    "Range",
    "add_number",
    "agent_params_table",
    "flags_table",
    "nonnegative_int",
    "number",
    "port",
    "positive_float",
    "positive_int",
    "valid",
]
