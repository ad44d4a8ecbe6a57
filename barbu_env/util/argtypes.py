"""Argument types for the command lines: each turns an option's text into its value or
raises ``argparse.ArgumentTypeError``, which ``OneLineParser`` prints as one line naming
the option (exit status 2). They catch typos (a count of 0, a negative seed); a value
that is merely large is the user's to give.

>>> positive_int("3"), nonnegative_int("0"), positive_float("0.5"), port("8000")
(3, 0, 0.5, 8000)
>>> positive_int("0")
Traceback (most recent call last):
argparse.ArgumentTypeError: must be a positive integer, not '0'
"""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from .files import error_line


def _checked(text: str, kind: type, what: str, ok) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer of at least 1 (games, workers, worlds, a batch size)."""
    return _checked(text, int, "a positive integer", lambda n: n >= 1)


def nonnegative_int(text: str) -> int:
    """An integer of at least 0 (a seed, a count that may be none)."""
    return _checked(text, int, "an integer of at least 0", lambda n: n >= 0)


def positive_float(text: str) -> float:
    """A finite number above 0 (seconds, frames per second)."""
    return _checked(text, float, "a finite number above 0", lambda x: math.isfinite(x) and x > 0)


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    return _checked(text, int, "a port from 0 to 65535", lambda n: 0 <= n <= 65535)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, ``PROG: error: MESSAGE
    (PROG --help lists the options)``, exit status 2; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        message = error_line(message, 600)  # argparse quotes what it was given: a long value is cut
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the options)\n")
