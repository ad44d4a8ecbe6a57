"""Optional dependencies: a feature whose extra is not installed fails with one line
naming the extra.

The core install (``pip install barbu``) holds what the engine, the environments, the
baseline agents, tournaments, the league and the command line need. Everything else is
an extra of ``pyproject.toml`` (``docs/install.md`` lists them). A feature that needs
one imports its package through ``require``, which returns the module, or raises
``MissingExtraError``, an ``ImportError`` whose message is the one line to act on:

>>> require("barbu_no_such_package", "train", "the shipped policy 'ppo'")
Traceback (most recent call last):
...
barbu_env.extras.MissingExtraError: the shipped policy 'ppo' needs barbu_no_such_package: pip install 'barbu[train]'
>>> require("json", "train", "anything").__name__
'json'

Only the package itself being absent is a missing extra. An installed package that fails
to import (a broken install, or a dependency of its own missing) raises its own error.
The command line prints the message, without a traceback, and exits with status 1.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """``feature`` needs ``module`` (of the distribution ``package``), which the extra
    ``extra`` installs, and it is not installed."""

    def __init__(self, module: str, extra: str, feature: str, package: str | None = None):
        self.module, self.extra, self.feature = module, extra, feature
        self.package = package or module.partition(".")[0]
        super().__init__(f"{feature} needs {self.package}: pip install 'barbu[{extra}]'", name=module)

    def __reduce__(self):  # it crosses process boundaries (tournament workers)
        return type(self), (self.module, self.extra, self.feature, self.package)


def _absent(error: ModuleNotFoundError, module: str) -> bool:
    """Whether ``error`` says that ``module`` or one of its parent packages is absent (and
    not some module that an installed package imports)."""
    parts = module.split(".")
    return error.name in {".".join(parts[: i + 1]) for i in range(len(parts))}


def require(module: str, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """``module``, imported; ``MissingExtraError`` if it is not installed. ``feature``
    says what needs it (the message's subject: ``"--plot"``, ``"barbu train"``),
    ``extra`` which extra of barbu installs it, ``package`` the name to show when it
    is not the module's top-level name (``require("pyspiel", "openspiel", ..., "open_spiel")``)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if not _absent(e, module):
            raise
        raise MissingExtraError(module, extra, feature, package) from None


__all__ = ["MissingExtraError", "require"]
