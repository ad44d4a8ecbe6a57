"""pytest configuration: modules of the optional extras (``pyproject.toml``) stay out of
the doctest collection when their library is not installed."""

from __future__ import annotations

import importlib.util

#: module -> the library it needs
_OPTIONAL_MODULES = {
    "barbu_env/rllib_env.py": "ray",
    "training/rllib_ppo.py": "ray",
    "training/torchrl_ppo.py": "torchrl",
}
collect_ignore = [path for path, library in _OPTIONAL_MODULES.items() if importlib.util.find_spec(library) is None]
