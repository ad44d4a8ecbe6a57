"""The optional RL libraries in tests: ``require("ray.rllib")`` imports a module of an
extra (``pip install -e ".[rllib,torchrl]"``), or of Tianshou or SuperSuit (installed by name:
``pip install -c constraints.txt tianshou supersuit``), and returns it. Without the extra the test
is skipped, except where ``BARBU_REQUIRE_INTEGRATIONS=1`` (``.ci/run``'s integration
step, which installs the extras to run exactly these tests): there a missing library
fails the test."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

#: Set to 1 where the extras must be installed: a missing library is then a failure, not a skip.
REQUIRE_ENV = "BARBU_REQUIRE_INTEGRATIONS"


def required() -> bool:
    """Whether a missing extra fails instead of skipping."""
    return os.environ.get(REQUIRE_ENV) == "1"


def require(module: str) -> ModuleType:
    """``module``, imported; skips the test without it, or fails under ``BARBU_REQUIRE_INTEGRATIONS=1``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if required():
            pytest.fail(f"{module} is not installed, and {REQUIRE_ENV}=1 requires it ({e})", pytrace=False)
        pytest.skip(f"{module} is not installed (optional: the rllib or torchrl extra, tianshou, supersuit)")
