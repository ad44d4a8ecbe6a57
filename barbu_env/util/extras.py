"""Optional dependencies: a feature whose extra is not installed fails with one line
naming the extra.

The core install (``pip install .`` in a clone of barbu, which is on no package index)
holds what the engine, the environments, the baseline agents, tournaments, the league and
the command line need. Everything else is an extra of ``pyproject.toml``
(``docs/install.md`` lists them). A feature that needs one imports its packages through
``require``, which returns the module, or inside a ``needs`` block (a module whose
top-level imports need the extra); both raise ``MissingExtraError``, an ``ImportError``
whose message is the one line to act on, ``install_hint(extra)`` after a colon:

>>> try:
...     require("no_such_package", "plot", "--plot")
... except MissingExtraError as e:
...     print(e)
--plot needs no_such_package: pip install -c constraints.txt -e ".[plot]" (in barbu's clone)
>>> require("json", "plot", "anything").__name__
'json'
>>> try:
...     with needs("rllib", "x", package="ray[rllib]"):
...         import no_such_package
... except MissingExtraError as e:
...     print(e)
x needs ray[rllib] (no module named 'no_such_package'): pip install -c constraints.txt -e ".[rllib]" (in barbu's clone)

A package is missing when the top-level package of the module that the import could not
find is not installed: the extra's package itself, or one it imports (a partial install:
Ray core, of the ``ray`` extra, without the packages of ``ray[rllib]``; the message then
names the module not found), also when that package turns the ``ModuleNotFoundError`` into
an ``ImportError`` of its own (Ray's ``ray.tune`` without pandas). A module missing from a
package that is installed (a broken install) raises its own ``ModuleNotFoundError``. The
command line prints the message, without a traceback, and exits with status 1.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` in a clone of barbu (with the
    constraints file, which keeps torch to its CPU wheel: ``docs/install.md``)."""
    return f'pip install -c constraints.txt -e ".[{extra}]" (in barbu\'s clone)'


class MissingExtraError(ImportError):
    """``feature`` needs ``module`` (of the distribution ``package``), which the extra
    ``extra`` installs, and it is not installed; ``missing``, when not ``module`` itself,
    is the module that the import did not find (a package ``module`` imports)."""

    def __init__(self, module: str, extra: str, feature: str, package: str | None = None, missing: str | None = None):
        self.module, self.extra, self.feature = module, extra, feature
        self.package = package or module.partition(".")[0]
        self.missing = missing
        top = {module.partition(".")[0], self.package.partition("[")[0]}
        detail = f" (no module named {missing!r})" if missing and missing.partition(".")[0] not in top else ""
        super().__init__(f"{feature} needs {self.package}{detail}: {install_hint(extra)}", name=missing or module)

    def __reduce__(self):  # it crosses process boundaries (tournament workers)
        return type(self), (self.module, self.extra, self.feature, self.package, self.missing)


def _absent(error: ModuleNotFoundError) -> bool:
    """Whether ``error`` is about a package that is not installed (its top-level package is
    absent), rather than a module missing from an installed package."""
    if not error.name:
        return False
    try:
        return importlib.util.find_spec(error.name.partition(".")[0]) is None
    except (ImportError, ValueError):  # a top-level module blocked or half-imported
        return True


def _not_installed(error: ImportError) -> str | None:
    """The module not found, if ``error`` comes from a package that is not installed: a
    ``ModuleNotFoundError`` for it, or an ``ImportError`` a package raised from one (Ray's
    ``ray.tune`` says in its own words that pandas is missing); None otherwise."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError):
            return cause.name if _absent(cause) else None
        cause = cause.__cause__ or cause.__context__
    return None


def require(module: str, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """``module``, imported; ``MissingExtraError`` if it, or a package it imports, is not
    installed. ``feature`` says what needs it (the message's subject: ``"--plot"``,
    ``"barbu train"``), ``extra`` which extra of barbu installs it, ``package`` the name to
    show when it is not the module's top-level name (``require("pyspiel", "openspiel",
    ..., "open_spiel")``, ``require("ray.rllib", "rllib", ..., "ray[rllib]")``)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        missing = _not_installed(e)
        if missing is None:
            raise
        raise MissingExtraError(module, extra, feature, package, missing) from None


@contextmanager
def needs(extra: str, feature: str, package: str | None = None) -> Iterator[None]:
    """A block of imports that need the extra ``extra``: a package they find missing raises
    ``MissingExtraError`` (``feature`` needs it, or ``package`` when given). A module whose
    top-level imports need an extra puts them in one::

        with needs("torchrl", "examples.torchrl_ppo"):
            import torchrl
            from tensordict import TensorDict
    """
    try:
        yield
    except ImportError as e:
        missing = _not_installed(e)
        if missing is None:
            raise
        module = package.partition("[")[0] if package else missing
        raise MissingExtraError(module, extra, feature, package, missing) from None


__all__ = ["MissingExtraError", "install_hint", "needs", "require"]
