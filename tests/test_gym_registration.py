"""``import barbu_env`` registers ``"Barbu-v1"`` with Gymnasium whatever was imported
before it, by entry-point strings only; ``gymnasium.register_envs(barbu_env)`` works (the
masks through the wrappers ``gymnasium.make`` adds: tests/test_integrations.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


@pytest.mark.parametrize(
    "imports",
    [
        "import barbu_env, gymnasium",  # barbu_env first: the order that used to fail
        pytest.param(  # Gymnasium 1.x's idiom
            "import gymnasium\nimport barbu_env\ngymnasium.register_envs(barbu_env)", marks=pytest.mark.slow
        ),
        pytest.param("import gymnasium\nfrom barbu_env.game import engine", marks=pytest.mark.slow),  # any submodule
    ],
)
def test_barbu_v1_is_made_whatever_was_imported_first(imports):
    code = (
        f"{imports}\n"
        "env = gymnasium.make('Barbu-v1', opponents='random', episode='hand')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(obs.shape[0], int(info['action_mask'].sum()) > 0)"
    )
    assert run(code) == ["1132", "True"]


@pytest.mark.slow  # an interpreter
def test_importing_barbu_env_registers_by_name_and_imports_no_environment():
    code = (
        "import sys, barbu_env, gymnasium\n"
        "spec = gymnasium.spec('Barbu-v1')\n"
        "print(spec.entry_point, spec.vector_entry_point, 'Barbu-v0' in gymnasium.registry,\n"
        "      'barbu_env.envs.gym_env' in sys.modules, 'pettingzoo' in sys.modules)"
    )
    assert run(code) == [
        "barbu_env.envs.gym_env:BarbuGymEnv",
        "barbu_env.envs.vector_gym:BarbuGymVectorEnv",
        "True",
        "False",
        "False",
    ]
