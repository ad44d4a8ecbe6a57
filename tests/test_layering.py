"""Imports point one way.

The engine is framework-free: importing it (or the package, the modules that observe,
render and record it, or the batched engine ``barbu_env.game.vector``) loads no RL or DL
framework but Gymnasium, whose registry the package's ``__init__`` fills with
``"Barbu-v1"``'s entry-point strings (Gymnasium is a core dependency, and the id must exist
whatever was imported first); no module of the engine imports Gymnasium itself, and
``import barbu_env`` does not load the batched engine (it loads numba: the kernels under
the engine are the rules); the tournament loads neither torch nor PettingZoo. Checked in
a fresh interpreter, since this test session imports them.

Within the package (read from the source, so that imports inside functions count too):
the folders are the layers (``LAYERS``, bottom first), and a module imports only from its
own folder or the folders below it; inside the game, a module imports only the game's
modules before it (``GAME_ORDER``); nothing imports a module that imports it back (no
circle, at the top or inside a function); nothing in ``barbu_env`` imports
``barbu_training`` or ``barbu_models`` but the CLI's ``train`` and ``exploit`` commands
and ``barbu_env.agents.belief`` (which loads its network from ``barbu_models.belief`` when
one is asked for), nor the web server but ``barbu serve``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import barbu_env

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("torch", "pettingzoo", "ray", "tensorflow", "jax")


def modules_loaded_by(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def frameworks_in(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in FRAMEWORKS]


#: Each statement runs in one fresh interpreter: the package, the modules that observe,
#: render, record and show a game, a hand played with an illegal action refused.
ENGINE_ONLY = (
    "import numpy as np\n"
    "import barbu_env, barbu_env.game.rules, barbu_env.game.cards, barbu_env.game.actions\n"
    "import barbu_env.game.constants, barbu_env.game.observation, barbu_env.game.render, barbu_env.evaluation.records\n"
    "import barbu_env.play.terminal, barbu_env.view.table, barbu_env.view.frames\n"
    "from barbu_env.game.engine import BarbuState, IllegalActionError\n"
    "s = BarbuState.new_game(rules='classic', rng=np.random.default_rng(0))\n"
    "while s.hand_number == 0:\n"
    "    s.apply_action(s.legal_actions()[0])\n"
    "try:\n"
    "    s.apply_action(84)\n"
    "except IllegalActionError:\n"
    "    pass"
)
#: The batched engine stepping a few games, and where the hidden cards are without the network.
BATCHED_AND_BELIEF = (
    "import numpy as np\n"
    "from barbu_env.game.vector import VectorBarbu\n"
    "from barbu_env.game.engine import BarbuState\n"
    "from barbu_env import belief\n"
    "v = VectorBarbu(3, rules='rotating', seed=0)\n"
    "obs, masks, seat = v.reset()\n"
    "for _ in range(200):\n"
    "    obs, masks, seat, rewards, dones, infos = v.step(np.argmax(masks, axis=1))\n"
    "s = BarbuState.new_game(rng=np.random.default_rng(0))\n"
    "belief.probabilities(s.observe(0), model='uniform')\n"
    "belief.sample_deals(s.observe(0), 4, np.random.default_rng(0), model='uniform')"
)


@pytest.mark.parametrize(
    "statement", [pytest.param(s, marks=pytest.mark.slow) for s in (ENGINE_ONLY, BATCHED_AND_BELIEF)]
)
def test_engine_imports_no_rl_framework(statement):
    modules = modules_loaded_by(statement)
    assert "barbu_env.game.engine" in modules
    # the batched engine only where it is used (the agents, among them belief, import the search)
    assert ("barbu_env.game.vector" in modules) == (statement is BATCHED_AND_BELIEF)
    assert frameworks_in(modules) == []


def test_only_the_package_init_imports_gymnasium_among_the_game_s_modules():
    importers = {
        path.stem
        for path in [PACKAGE / "__init__.py", *(PACKAGE / "game" / f"{name}.py" for name in GAME_ORDER)]
        for module, _ in barbu_imports(path)
        if module.split(".")[0] == "gymnasium"
    }
    assert importers == {"__init__"}


# ---------------------------------------------------------------------- imports point one way

PACKAGE = Path(barbu_env.__file__).resolve().parent

#: The layers, bottom first: each folder of ``barbu_env`` imports only from itself and the
#: folders before it. ``util`` knows nothing of the game; ``game`` is the rules, the kernels,
#: one game and B games, positions, worlds and the play driver; ``view`` is what a person
#: sees of a game; ``agents`` play it; ``envs`` are the RL adapters; ``evaluation`` plays
#: and records tournaments and leagues; ``play`` seats a person (terminal, browser); ``cli``
#: is the command line.
LAYERS = ("util", "game", "view", "agents", "envs", "evaluation", "play", "cli")
#: The game's modules, each importing (at the top or inside a function) only modules
#: before it: the action ids, the observation layout and the bit helpers below the
#: kernels (the one implementation of the rules), the kernels below the engine that views
#: one game through them, the engine below positions, worlds and the batched engine, and
#: the batched engine below the driver that plays games on it.
GAME_ORDER = (
    "cards",
    "constants",
    "rules",
    "actions",
    "render",
    "observation",
    "_bits",
    "_kernels",
    "engine",
    "position",
    "worlds",
    "vector",
    "driver",
    "credit",
)
#: The package's own names that modules may import from it (``from .. import __version__``);
#: the lazily imported environment resolves to the module that defines it.
FACE = {"__version__": None, "env": "envs.aec", "raw_env": "envs.aec"}
#: The one place ``barbu_env`` imports ``barbu_training``: the CLI's ``train`` and
#: ``exploit`` commands. (Installed packages also declare agent loaders under the entry-point
#: group ``barbu.agent_loaders``; ``barbu_training`` declares its checkpoint loaders there.
#: That is a plug-in mechanism: ``agents.registry`` reads the entry points by name through
#: ``importlib.metadata`` when a file path is given as an agent, and imports no module.)
#: The belief module's ``_load`` imports its network, ``barbu_models.belief``, when one is asked for.
TRAINING_IMPORTS_ALLOWED = {("passthrough", "run_train"), ("passthrough", "run_exploit"), ("belief", "_load")}


def barbu_imports(path: Path, package_name: str | None = None) -> list[tuple[str, str | None]]:
    """(imported module, enclosing function or None) of every import in a file of the
    package (or of the package ``package_name``) but those under ``if TYPE_CHECKING:``
    (which never run), relative imports resolved (``from . import env`` is the
    environment's module)."""
    if package_name is None:
        package_name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    package = package_name.split(".")  # the package a relative import starts from (also for __init__.py)
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
                        name = FACE.get(alias.name, alias.name) if module == "barbu_env" else alias.name
                        if name is not None:
                            found.append((f"{module}.{name}", function))
                else:
                    found.append((module, function))
            visit(child, inner)

    visit(ast.parse(path.read_text()), None)
    return found


def package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(module: str) -> str | None:
    """The layer (folder) of a ``barbu_env`` module, or None for the package's own face."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else None


def test_the_folders_are_the_layers():
    # Every module of the package lives in a layer's folder but the package's face.
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS)
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose == {"__init__.py", "barbu_v1.py", "belief.py"}


def test_each_layer_imports_only_its_own_folder_and_those_below():
    for path in package_modules():
        here = path.relative_to(PACKAGE).parts
        if len(here) == 1:
            continue  # the face: the package's __init__ and barbu_v1 name what the layers define
        level = LAYERS.index(here[0])
        for module, function in barbu_imports(path):
            if not module.startswith("barbu_env.") or (layer := layer_of(module)) is None:
                continue
            assert LAYERS.index(layer) <= level, (
                f"{path.relative_to(PACKAGE.parent)} ({here[0]}) imports {module} ({layer}), a layer above it"
                + (f" (in {function})" if function else "")
            )


def test_the_game_modules_import_only_those_before_them():
    for k, name in enumerate(GAME_ORDER):
        below = {f"barbu_env.game.{m}" for m in GAME_ORDER[:k]}
        for module, _ in barbu_imports(PACKAGE / "game" / f"{name}.py"):
            if module.startswith("barbu_env.game."):
                target = ".".join(module.split(".")[:3])
                assert target in below, f"barbu_env.game.{name} imports {target}, which is not below it in GAME_ORDER"
            else:
                assert not module.startswith("barbu_env.") or layer_of(module) == "util", module


#: The folders whose modules the circle check reads, by the name they are imported under.
IMPORT_ROOTS = {
    "barbu_env": PACKAGE,
    "barbu_training": PACKAGE.parent / "training",
    "barbu_models": PACKAGE.parent / "models",
    "benchmarks": PACKAGE.parent / "benchmarks",
    "examples": PACKAGE.parent / "examples",
}


def test_no_module_imports_one_that_imports_it_back():
    names: dict[str, Path] = {}
    for root_name, folder in IMPORT_ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [root_name, *(rel.parts[:-1] if rel.name == "__init__" else rel.parts)]
            names[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module, _ in barbu_imports(path, package):
            while module and module not in names:  # ``from x import name``: the module x
                module = module.rpartition(".")[0]
            if module and module != name and not name.startswith(module + "."):
                targets.add(module)
        graph[name] = targets
    # a depth-first search for a circle, reporting the first one found
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(trail[trail.index(nxt) :] + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_the_package_imports_training_only_for_the_train_command():
    seen = set()
    for path in package_modules():
        for module, function in barbu_imports(path):
            if module.split(".")[0] in ("barbu_training", "barbu_models"):
                where = (path.stem, function)
                assert where in TRAINING_IMPORTS_ALLOWED, f"{path.relative_to(PACKAGE.parent)} imports {module}"
                seen.add(where)
    assert seen == TRAINING_IMPORTS_ALLOWED  # the probe finds the one import it allows


#: The one place ``barbu_env`` imports the web server (FastAPI, an optional extra): ``barbu serve``.
WEB_IMPORTS_ALLOWED = {("serve", "run")}


def test_only_the_serve_command_imports_the_web_server():
    seen = set()
    for path in package_modules():
        if "web" in path.relative_to(PACKAGE).parts:
            continue
        for module, function in barbu_imports(path):
            if module.startswith("barbu_env.play.web") or module.split(".")[0] in ("fastapi", "uvicorn", "starlette"):
                where = (path.stem, function)
                assert where in WEB_IMPORTS_ALLOWED, f"{path.relative_to(PACKAGE.parent)} imports {module}"
                seen.add(where)
    assert seen == WEB_IMPORTS_ALLOWED


@pytest.mark.slow  # an interpreter playing
def test_the_tournament_loads_neither_torch_nor_pettingzoo_even_playing():
    modules = modules_loaded_by(
        "from barbu_env.evaluation.tournament import evaluate\n"
        "evaluate(['heuristic', 'random', 'random', 'random'], games=4, seed=0, workers=1)"
    )
    assert "barbu_env.evaluation.tournament" in modules
    assert [m for m in modules if m.split(".")[0] in ("torch", "pettingzoo", "barbu_training", "barbu_models")] == []
