"""A command's outputs once its results are printed: each written in turn, a failure one line.

``write_outputs`` writes a command's files (``--out``, ``--plot``, ``--records``,
``--record``, ``--video``) after the results they hold were printed; one that cannot be
written (a full disk) is one line on stderr, ``barbu CMD: not saved: ...``
(``report_not_saved``), the others are still attempted, and the exit status is 1. Each
file was refused before any work if it could not be written
(``barbu_env.util.files.check_writable``), and is written whole or not at all
(``barbu_env.util.files``). Used by the ``barbu`` commands and by ``barbu exploit``
(``barbu_training.exploit``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

__all__ = ["report_not_saved", "write_outputs"]


def report_not_saved(command: str, problem: object) -> None:
    """The line that says an output was not written (``OutputError`` names the file and
    says why), on stderr, after the results it would have held were printed."""
    from ..util.files import error_line

    print(error_line(f"barbu {command}: not saved: {problem}"), file=sys.stderr)


def write_outputs(command: str, writes: Sequence[tuple[Callable[[], object], str]]) -> int:
    """Write each output in turn, once the results are printed: ``writes`` are (a write,
    the line printed when it is done). One that fails (a full disk) is reported in one
    line and the others are still attempted. Returns the exit status: 0 if all were
    written, 1 otherwise."""
    status = 0
    for write, done in writes:
        try:
            write()
        except (OSError, ValueError) as e:
            report_not_saved(command, e)
            status = 1
        else:
            print(done)
    return status
