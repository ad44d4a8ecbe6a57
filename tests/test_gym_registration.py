"""``import barbu_env`` registers ``"Barbu-v1"`` with Gymnasium whatever was imported
before it, by entry-point strings only; ``gymnasium.register_envs(barbu_env)`` works; the
masks are reachable through the wrappers ``gymnasium.make`` adds, as the docs say."""

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
        "import gymnasium, barbu_env",
        "import gymnasium\nimport barbu_env\ngymnasium.register_envs(barbu_env)",  # Gymnasium 1.x's idiom
        "import gymnasium\nfrom barbu_env.game import engine",  # any submodule imports the package
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


def test_the_old_id_still_refuses_after_import():
    code = (
        "import barbu_env, gymnasium\n"
        "try:\n    gymnasium.make('Barbu-v0')\n"
        "except gymnasium.error.DeprecatedEnv as refusal:\n    print('refused', 'Barbu-v1' in str(refusal))"
    )
    assert run(code) == ["refused", "True"]


def test_action_masks_through_gymnasium_make_as_the_docs_show():
    import gymnasium

    import barbu_env

    gymnasium.register_envs(barbu_env)
    env = gymnasium.make("Barbu-v1", opponents="random", episode="hand")
    _, info = env.reset(seed=3)
    with pytest.raises(AttributeError):
        env.action_masks()  # the wrappers gymnasium.make adds do not forward it
    assert (env.unwrapped.action_masks() == info["action_mask"].astype(bool)).all()
    assert (env.get_wrapper_attr("action_masks")() == info["action_mask"].astype(bool)).all()
