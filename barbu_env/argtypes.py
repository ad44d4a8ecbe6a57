"""Argument types for the command lines (``barbu``, ``python -m barbu_env.bench``): each
turns an option's text into its value or raises ``argparse.ArgumentTypeError`` with the
reason, which argparse prints as one line (``OneLineParser``) naming the option.

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


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}") from None


def positive_int(text: str) -> int:
    """An integer of at least 1 (games, workers, worlds, a batch size)."""
    n = _int(text, "a positive integer")
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return n


def nonnegative_int(text: str) -> int:
    """An integer of at least 0 (a seed, a count that may be none)."""
    n = _int(text, "an integer of at least 0")
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 0, not {text!r}")
    return n


def positive_float(text: str) -> float:
    """A finite number above 0 (seconds, frames per second)."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text!r}")
    return x


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    n = _int(text, "a port number 0..65535")
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, not {text!r}")
    return n


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, ``PROG: error: MESSAGE
    (PROG --help lists the options)``, exit status 2; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the options)\n")


__all__ = ["OneLineParser", "nonnegative_int", "port", "positive_float", "positive_int"]
