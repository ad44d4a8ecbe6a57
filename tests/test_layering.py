"""Imports point one way.

The engine is framework-free: importing it (or the package, the modules that observe,
render and record it, or the batched engine ``barbu_env.vector``) loads no RL or DL
framework but Gymnasium, whose registry the package's ``__init__`` fills with
``"Barbu-v1"``'s entry-point strings (Gymnasium is a core dependency, and the id must exist
whatever was imported first); no module of the engine imports Gymnasium itself, and
``import barbu_env`` does not load the batched engine (it loads numba: the kernels under
the engine are the rules); the tournament loads neither torch nor PettingZoo. Checked in
a fresh interpreter, since this test session imports them.

Within the package (read from the source, so that imports inside functions count too):
the engine's modules import only modules below them (the action ids and ``mask_array``
below the engine, never the other way), and nothing in ``barbu_env`` imports
``training`` or ``models`` but the CLI's ``train`` command.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import barbu_env

FRAMEWORKS = ("torch", "pettingzoo", "ray", "tensorflow", "jax")


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
        "import barbu_env.constants, barbu_env.observation, barbu_env.render, barbu_env.records",
        # The terminal seat, the table views and the frames (Pillow) load no RL framework either.
        "import barbu_env.engine, barbu_env.human, barbu_env.table, barbu_env.frames",
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


def test_only_the_package_init_imports_gymnasium_among_the_engine_s_modules():
    importers = {
        path.stem
        for path in [PACKAGE / "__init__.py", *(PACKAGE / f"{name}.py" for name in CORE_ORDER)]
        for module, _ in barbu_imports(path)
        if module.split(".")[0] == "gymnasium"
    }
    assert importers == {"__init__"}


def test_the_check_sees_a_framework_when_one_is_imported():
    # The probe itself works: importing the environment does load pettingzoo.
    assert "pettingzoo" in frameworks_in(modules_loaded_by("import barbu_env\nbarbu_env.env"))


# ---------------------------------------------------------------------- imports point one way

PACKAGE = Path(barbu_env.__file__).resolve().parent

#: The engine's modules, each importing (at the top or inside a function) only modules
#: before it: the action ids, the observation layout and the bit helpers below the
#: kernels, the kernels (the one implementation of the rules) below the engine that views
#: one game through them, the engine below what records it and the batched engine, and
#: the batched engine below the driver that plays games on it.
CORE_ORDER = (
    "files",
    "cards",
    "constants",
    "rules",
    "actions",
    "render",
    "observation",
    "_bits",
    "_kernels",
    "engine",
    "records",
    "position",
    "worlds",
    "vector",
    "driver",
)
#: Imports that go up on purpose: ``replay_record`` checks a record by replaying it
#: through the PettingZoo environment, loaded only when it is called.
UPWARD_ALLOWED = {("records", "aec")}
#: The one place ``barbu_env`` imports ``training``: the CLI's ``train`` command runs its
#: trainer. (Installed packages also declare agent loaders under the entry-point group
#: ``barbu.agent_loaders``; ``training`` declares its checkpoint loaders there. That is a
#: plug-in mechanism: ``agents.registry`` reads the entry points by name through
#: ``importlib.metadata`` when a file path is given as an agent, and imports no module.)
TRAINING_IMPORTS_ALLOWED = {("cli", "_run_train"), ("cli", "_run_exploit")}


def barbu_imports(path: Path) -> list[tuple[str, str | None]]:
    """(imported module, enclosing function or None) of every import in a file of the
    package but those under ``if TYPE_CHECKING:`` (which never run), relative imports
    resolved (``from . import env`` is the environment's module)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1])  # the package a relative import starts from (also for __init__.py)
    found: list[tuple[str, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                continue  # imports for type annotations only: never executed
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Import):
                found.extend((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = package[: len(package) - child.level + 1] if child.level else []
                module = ".".join(base + ([child.module] if child.module else []))
                if child.module is None:  # from . import name: a module, or one of the package's names
                    for alias in child.names:
                        name = {"env": "aec", "raw_env": "aec"}.get(alias.name, alias.name)
                        found.append((f"{module}.{name}", function))
                else:
                    found.append((module, function))
            visit(child, inner)

    visit(ast.parse(path.read_text()), None)
    return found


def package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_engine_layers_import_only_downwards():
    for k, name in enumerate(CORE_ORDER):
        below = set(CORE_ORDER[:k])
        for module, _ in barbu_imports(PACKAGE / f"{name}.py"):
            parts = module.split(".")
            if parts[0] != "barbu_env" or len(parts) == 1:
                continue
            target = parts[1]
            assert target in below or (name, target) in UPWARD_ALLOWED, (
                f"barbu_env.{name} imports barbu_env.{target}, which is not below it in {CORE_ORDER}"
            )


def test_actions_need_no_engine():
    imported = {m for m, _ in barbu_imports(PACKAGE / "actions.py")}
    assert "barbu_env.engine" not in imported and "barbu_env.actions" not in {
        m for m, _ in barbu_imports(PACKAGE / "constants.py")
    }
    assert {m for m, _ in barbu_imports(PACKAGE / "engine.py")} >= {"barbu_env.actions", "barbu_env.constants"}


def test_the_package_imports_training_only_for_the_train_command():
    seen = set()
    for path in package_modules():
        for module, function in barbu_imports(path):
            if module.split(".")[0] in ("training", "models"):
                where = (path.stem, function)
                assert where in TRAINING_IMPORTS_ALLOWED, f"{path.relative_to(PACKAGE.parent)} imports {module}"
                seen.add(where)
    assert seen == TRAINING_IMPORTS_ALLOWED  # the probe finds the one import it allows


#: The one place ``barbu_env`` imports the web server (FastAPI, an optional extra): ``barbu serve``.
WEB_IMPORTS_ALLOWED = {("cli", "_run_serve")}


def test_only_the_serve_command_imports_the_web_server():
    seen = set()
    for path in package_modules():
        if path.parent.name == "web":
            continue
        for module, function in barbu_imports(path):
            if module.startswith("barbu_env.web") or module.split(".")[0] in ("fastapi", "uvicorn", "starlette"):
                where = (path.stem, function)
                assert where in WEB_IMPORTS_ALLOWED, f"{path.relative_to(PACKAGE.parent)} imports {module}"
                seen.add(where)
    assert seen == WEB_IMPORTS_ALLOWED


def test_the_probe_resolves_relative_imports():
    # Without this, the checks above would pass on a parser that found nothing.
    imports = dict(barbu_imports(PACKAGE / "records.py"))
    assert "barbu_env.render" in imports and imports["barbu_env.aec"] == "replay_record"
    assert ("barbu_env.observation", None) in barbu_imports(PACKAGE / "agents" / "heuristic.py")


def test_the_tournament_loads_neither_torch_nor_pettingzoo_even_playing():
    modules = modules_loaded_by(
        "from barbu_env.tournament import evaluate\n"
        "evaluate(['heuristic', 'random', 'random', 'random'], games=4, seed=0, workers=1)"
    )
    assert "barbu_env.tournament" in modules
    assert [m for m in modules if m.split(".")[0] in ("torch", "pettingzoo", "training", "models")] == []
