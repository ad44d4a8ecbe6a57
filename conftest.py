"""pytest configuration: modules of the optional extras (``pyproject.toml``) stay out of
the doctest collection when their library is not installed (unless
``BARBU_REQUIRE_INTEGRATIONS=1``, where their absence must fail)."""

from __future__ import annotations

import importlib.util
import os

#: module -> the library it needs
_OPTIONAL_MODULES = {
    "barbu_env/envs/openspiel.py": "pyspiel",
    "barbu_env/envs/rllib_env.py": "ray.rllib",
    "examples/rllib_ppo.py": "ray.rllib",
    "examples/torchrl_ppo.py": "torchrl",
}


def _importable(library: str) -> bool:
    """Whether ``library`` imports: ``ray.rllib`` ships inside Ray core (the ``ray``
    extra, in dev) but needs the ``rllib`` extra's own dependencies to import."""
    if importlib.util.find_spec(library.partition(".")[0]) is None:
        return False
    try:
        importlib.import_module(library)
    except Exception:  # ImportError, or whatever a half-installed library raises: its doctests stay out
        return False
    return True


collect_ignore = [
    path
    for path, library in _OPTIONAL_MODULES.items()
    if os.environ.get("BARBU_REQUIRE_INTEGRATIONS") != "1" and not _importable(library)
]  # with BARBU_REQUIRE_INTEGRATIONS=1 (.ci/run's integration step) a missing library fails their collection
