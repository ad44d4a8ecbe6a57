"""The doctests of barbu_training and barbu_models, run under their installed names.

Their folders (training/, models/) are not pytest's doctest paths: collected there, a module
would be imported a second time as ``training.x`` beside ``barbu_training.x``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import barbu_models
import barbu_training


def _modules(package) -> list[str]:
    return sorted(f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__))


@pytest.mark.parametrize("name", _modules(barbu_training) + _modules(barbu_models))
def test_the_module_s_examples_run(name):
    try:
        module = importlib.import_module(name)
    except ImportError as e:  # an optional extra this install lacks (Ray, TorchRL, ...)
        pytest.skip(f"{name}: {e}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples of {name} failed (run python -m doctest -v)"
    )
