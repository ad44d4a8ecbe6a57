"""An installed wheel is complete: built from the sources, installed into a fresh directory
outside the repository and imported from there (not from the editable install), it has
the rules presets and ``barbu eval --rules classic`` runs, and the shipped policy ``ppo`` plays.

And it installs lean: its unconditional requirements are the core ones, and installed with
only them into a fresh virtual environment (slow: the install, then numba compiling the
agents' kernels there), it has no torch, SB3, TensorBoard or matplotlib, plays a duplicate
evaluation of ``heuristic`` and ``pimc``, and asking for ``ppo`` says in one line to install
``barbu[train]``."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from barbu_env.agents.pretrained import SHIPPED
from barbu_env.game.rules import load_rules, preset_names
from barbu_env.util.extras import install_hint

ROOT = Path(__file__).resolve().parent.parent
#: What a wheel is built from (``pyproject.toml`` names README.md as the readme), and
#: ``experiments/``, which must stay out of it. The build runs on a copy, so that it writes no
#: ``build/`` or ``*.egg-info`` into the work tree.
SOURCES = ("pyproject.toml", "README.md", "barbu_env", "training", "models", "experiments")
#: The installed packages: what users run. Experiments and benchmarks run from a checkout.
PACKAGES = {"barbu_env", "barbu_training", "barbu_models"}

PROBE = """\
import json, barbu_env
from barbu_env.game.rules import PRESETS_DIR, load_rules, preset_names
print(json.dumps({"module": barbu_env.__file__, "presets_dir": str(PRESETS_DIR), "presets": preset_names(),
                  "classic": load_rules("classic").to_dict()}))
"""


def _can_build_here() -> bool:
    """Whether this environment has what ``pyproject.toml``'s build needs (setuptools >= 68, and
    bdist_wheel: in setuptools since 70.1, else the ``wheel`` package), so that the wheel builds
    offline without build isolation. A fresh venv may have an older setuptools: then pip builds in
    an isolated environment, from the index, as the editable install did."""
    try:
        version = tuple(int(part) for part in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return version >= (70, 1) or (version >= (68, 0) and importlib.util.find_spec("wheel") is not None)


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
#: What ``pip install barbu`` brings: the engine, the environments, the baseline agents,
#: tournaments, the league and the command line need nothing else (the rest are extras).
CORE_REQUIREMENTS = {"numpy", "numba", "gymnasium", "pettingzoo", "pyyaml", "tqdm", "pillow"}
#: Packages of the extras that a core install must not have (module names).
NOT_IN_CORE = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "matplotlib")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources (once for this module's tests)."""
    tmp_path = tmp_path_factory.mktemp("build")
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    offline = ["--no-build-isolation", "--no-index"] if _can_build_here() else []
    _run([*PIP, "wheel", "--no-deps", *offline, "-w", str(tmp_path / "dist"), str(src)], cwd=tmp_path)
    (built,) = (tmp_path / "dist").glob("barbu-*.whl")
    return built


def _requirements(wheel: Path) -> tuple[set[str], dict[str, set[str]]]:
    """The wheel's unconditional requirements, and its extras' (names only)."""
    with zipfile.ZipFile(wheel) as z:
        (metadata,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        lines = z.read(metadata).decode().splitlines()
    core: set[str] = set()
    extras: dict[str, set[str]] = {}
    for line in lines:
        if line.startswith("Requires-Dist: "):
            requirement, _, marker = line.removeprefix("Requires-Dist: ").partition(";")
            name = re.split(r"[\s<>=!~\[(]", requirement.strip(), maxsplit=1)[0].lower()
            extra = re.search(r"extra\s*==\s*[\"']([^\"']+)", marker)
            (extras.setdefault(extra.group(1), set()) if extra else core).add(name)
    return core, extras


@pytest.mark.slow  # building the wheel
def test_the_wheel_requires_only_the_core_and_puts_the_rest_in_extras(wheel):
    core, extras = _requirements(wheel)
    assert core == CORE_REQUIREMENTS
    assert {"torch", "stable-baselines3", "sb3-contrib", "tensorboard"} <= extras["train"]
    assert "matplotlib" in extras["plot"]
    assert {"train", "plot", "web", "video", "openspiel", "rllib", "torchrl", "all", "dev"} <= set(extras)


@pytest.mark.slow  # building the wheel
def test_the_wheel_ships_the_packages_and_no_experiment(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == PACKAGES
    experiments = {p.name for p in (ROOT / "experiments").glob("*.py") if p.name != "__init__.py"}
    assert experiments >= {"distill.py", "bench_training.py", "bench_rllib_cluster.py", "fit_hand_values.py"}
    shipped = [n for n in names if Path(n).name in experiments]
    assert shipped == [], f"experiments in the wheel: {shipped}"
    assert (
        "barbu_training/ppo.py" in names and "barbu_training/checkpoint_loader.py" in names
    )  # the probe sees the packages


@pytest.mark.slow  # a wheel install
def test_a_wheel_installed_outside_the_repository_has_the_presets_and_the_shipped_policies(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    shipped = sorted(Path(n).stem for n in names if n.startswith("barbu_env/game/presets/") and n.endswith(".yaml"))
    assert shipped == preset_names()

    site = tmp_path / "site"
    _run([*PIP, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}

    probe = json.loads(_run([sys.executable, "-c", PROBE], cwd=elsewhere, env=env).stdout)
    assert Path(probe["module"]).is_relative_to(site), probe["module"]  # not the editable install
    assert Path(probe["presets_dir"]).is_relative_to(site)
    assert probe["presets"] == preset_names()
    assert probe["classic"] == load_rules("classic").to_dict()
    for name, checkpoint in SHIPPED.items():  # every shipped policy, with its model card (played: the slow tests below)
        card = Path(checkpoint).with_suffix(".md").name
        assert {f"barbu_env/agents/pretrained/{f}" for f in (checkpoint, card)} <= set(names), name


#: Run in the core install: the shipped policy without torch.
PPO_WITHOUT_TORCH = """\
from barbu_env.agents import make_agent
from barbu_env.util.extras import MissingExtraError
try:
    make_agent("ppo")
except MissingExtraError as e:
    print(e)
"""


@pytest.mark.slow
def test_the_core_install_plays_heuristic_and_pimc_and_names_the_train_extra_for_ppo(wheel, tmp_path):
    venv = tmp_path / "venv"  # outside the repository, without the system's packages
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    python = str(bin_dir / "python")
    _run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", str(wheel)], cwd=tmp_path, env=env)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = f"import importlib.util as u, json; print(json.dumps([m for m in {NOT_IN_CORE!r} if u.find_spec(m)]))"
    assert json.loads(_run([python, "-c", probe], cwd=elsewhere, env=env).stdout) == []

    barbu = str(bin_dir / "barbu")
    done = _run(
        [barbu, "eval", "--rules", "classic", "--agents", "heuristic,pimc:worlds=4,heuristic,pimc:worlds=4",
         "--games", "4", "--workers", "1", "--no-progress", "--out", "result.json"],
        cwd=elsewhere,
        env=env,
    )  # fmt: skip
    assert "Duplicate tournament: 4 games = 1 deal set x 4 seatings" in done.stdout and "rules classic" in done.stdout
    doc = json.loads((elsewhere / "result.json").read_text())
    assert [e["label"] for e in doc["entries"]] == ["heuristic", "pimc:worlds=4"]
    # duplicate: one deal set in the four seatings, so each instance plays the deals from every seat
    assert sorted((g["deal_set"], g["seating"]) for g in doc["games"]) == [(0, 0), (0, 1), (0, 2), (0, 3)]
    for seat in range(4):
        assert len({g["seats"][seat] for g in doc["games"]}) == 4

    message = f"the shipped policy 'ppo' needs torch: {install_hint('train')}"
    assert _run([python, "-c", PPO_WITHOUT_TORCH], cwd=elsewhere, env=env).stdout == message + "\n"
    failed = subprocess.run(
        [barbu, "eval", "--agents", "ppo,heuristic,heuristic,heuristic", "--games", "4", "--no-progress"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (failed.returncode, failed.stdout, failed.stderr) == (1, "", f"barbu eval: error: {message}\n")


#: A user's own project with packages named ``models`` and ``training``, whose modules fail if
#: anything of barbu's imports them.
USER_PACKAGE_MODULES = {
    "models/__init__.py": "",
    "models/policy.py": "raise ImportError('the user project models.policy was imported')\n",
    "training/__init__.py": "",
    "training/checkpoint_loader.py": "raise ImportError('the user project training.checkpoint_loader was imported')\n",
    "training/policy_agent.py": "raise ImportError('the user project training.policy_agent was imported')\n",
    "training/ppo.py": "raise ImportError('the user project training.ppo was imported')\n",
}
WHICH_PPO = """\
from barbu_env.agents import make_agent
import models, training
agent = make_agent("ppo")
print(type(agent).__module__, models.__file__, training.__file__)
"""


@pytest.mark.slow  # about 35 s: a wheel install, an evaluation and a tiny training run
def test_a_user_project_with_its_own_models_and_training_packages_runs_the_shipped_policies_and_train(wheel, tmp_path):
    site = tmp_path / "site"
    _run([*PIP, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], cwd=tmp_path)
    project = tmp_path / "project"
    for name, text in USER_PACKAGE_MODULES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    # the project's root first on the path, as `python -m` and `python -c` put it there
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": f"{project}{os.pathsep}{site}"}

    module, models_file, training_file = _run([sys.executable, "-c", WHICH_PPO], cwd=project, env=env).stdout.split()
    assert module == "barbu_training.policy_agent"
    assert Path(models_file).is_relative_to(project) and Path(training_file).is_relative_to(project)

    done = _run(
        [sys.executable, "-m", "barbu_env.cli.main", "eval",
         "--agents", "ppo,heuristic,heuristic,heuristic", "--games", "4", "--workers", "1", "--no-progress"],
        cwd=project,
        env=env,
    )  # fmt: skip
    assert "ppo" in done.stdout
    config = project / "tiny.yaml"
    config.write_text(
        "num_workers: 1\nnum_games: 2\nminibatch_size: 512\nupdate_epochs: 1\nhidden: 32\ncard_embed: 4\n"
        "eval_every: 0\nfinal_eval_games: 0\nprogress: false\ntorch_threads: 1\ntotal_decisions: 3000\n"
        "exp_name: mine\nrun_dir: runs\n"
    )
    _run([sys.executable, "-m", "barbu_env.cli.main", "train", "--config", str(config)], cwd=project, env=env)
    assert (project / "runs" / "mine" / "summary.json").exists()
