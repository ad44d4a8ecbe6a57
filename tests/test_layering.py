"""The engine is framework-free: importing it (or the package, or the batched engine
``barbu_env.vector``) loads no RL or DL framework, and ``import barbu_env`` does not load
the batched engine (nor numba). Checked in a fresh interpreter, since this test session
imports them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("torch", "pettingzoo", "gymnasium")


def modules_loaded_by(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def frameworks_in(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in FRAMEWORKS]


@pytest.mark.parametrize(
    "statement",
    [
        "import barbu_env.engine",
        "import barbu_env",
        "import barbu_env.rules, barbu_env.cards, barbu_env.actions",
        # Playing a hand and raising an illegal-action error load nothing more either.
        "import numpy as np\n"
        "from barbu_env.engine import BarbuState, IllegalActionError\n"
        "s = BarbuState.new_game(rules='classic', rng=np.random.default_rng(0))\n"
        "while s.hand_number == 0:\n"
        "    s.apply_action(s.legal_actions()[0])\n"
        "try:\n"
        "    s.apply_action(84)\n"
        "except IllegalActionError:\n"
        "    pass",
        # The batched engine and its numba kernels, stepping a few games.
        "import numpy as np\n"
        "from barbu_env.vector import VectorBarbu\n"
        "v = VectorBarbu(3, rules='rotating', seed=0)\n"
        "obs, masks, seat = v.reset()\n"
        "for _ in range(200):\n"
        "    obs, masks, seat, rewards, dones, infos = v.step(np.argmax(masks, axis=1))",
    ],
)
def test_engine_imports_no_rl_framework(statement):
    modules = modules_loaded_by(statement)
    assert "barbu_env.engine" in modules
    assert ("barbu_env.vector" in modules) == ("VectorBarbu" in statement)
    assert frameworks_in(modules) == []


def test_the_check_sees_a_framework_when_one_is_imported():
    # The probe itself works: importing the environment does load pettingzoo.
    assert "pettingzoo" in frameworks_in(modules_loaded_by("import barbu_env\nbarbu_env.env"))
