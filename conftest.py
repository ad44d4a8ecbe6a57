"""pytest configuration: modules of the optional extras (``pyproject.toml``) stay out of
the doctest collection when their library is not installed (unless
``BARBU_REQUIRE_INTEGRATIONS=1``, where their absence must fail)."""

from __future__ import annotations

import importlib.util
import os

#: module -> the library it needs
_OPTIONAL_MODULES = {
    "barbu_env/openspiel.py": "pyspiel",
    "barbu_env/rllib_env.py": "ray",
    "training/rllib_ppo.py": "ray",
    "training/torchrl_ppo.py": "torchrl",
}
collect_ignore = [
    path
    for path, library in _OPTIONAL_MODULES.items()
    if importlib.util.find_spec(library) is None and os.environ.get("BARBU_REQUIRE_INTEGRATIONS") != "1"
]  # with BARBU_REQUIRE_INTEGRATIONS=1 (.ci/run's integration step) a missing library fails their collection
