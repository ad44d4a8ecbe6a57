"""An installed wheel is complete: built from the sources, installed into a fresh directory
outside the repository and imported from there (not from the editable install), it has
the rules presets and ``barbu eval --rules classic`` runs, and the shipped policy ``ppo`` plays."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from barbu_env.agents.pretrained import SHIPPED
from barbu_env.rules import load_rules, preset_names

ROOT = Path(__file__).resolve().parent.parent
#: What a wheel is built from (``pyproject.toml`` names README.md as the readme). The build
#: runs on a copy, so that it writes no ``build/`` or ``*.egg-info`` into the work tree.
SOURCES = ("pyproject.toml", "README.md", "barbu_env", "training", "models")

PROBE = """\
import json, barbu_env
from barbu_env.rules import PRESETS_DIR, load_rules, preset_names
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


def test_a_wheel_installed_outside_the_repository_has_the_presets_and_evaluates(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    offline = ["--no-build-isolation", "--no-index"] if _can_build_here() else []
    _run([*pip, "wheel", "--no-deps", *offline, "-w", str(tmp_path / "dist"), str(src)], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("barbu-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    shipped = sorted(Path(n).stem for n in names if n.startswith("barbu_env/presets/") and n.endswith(".yaml"))
    assert shipped == preset_names()

    site = tmp_path / "site"
    _run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}

    probe = json.loads(_run([sys.executable, "-c", PROBE], cwd=elsewhere, env=env).stdout)
    assert Path(probe["module"]).is_relative_to(site), probe["module"]  # not the editable install
    assert Path(probe["presets_dir"]).is_relative_to(site)
    assert probe["presets"] == preset_names()
    assert probe["classic"] == load_rules("classic").to_dict()

    done = _run(
        [sys.executable, "-m", "barbu_env.cli", "eval", "--rules", "classic",
         "--agents", "heuristic,random,random,random", "--games", "4", "--workers", "1", "--no-progress"],
        cwd=elsewhere,
        env=env,
    )  # fmt: skip
    assert "rules classic" in done.stdout and "heuristic" in done.stdout
    for name, checkpoint in SHIPPED.items():  # every shipped policy, with its model card
        card = Path(checkpoint).with_suffix(".md").name
        assert {f"barbu_env/agents/pretrained/{f}" for f in (checkpoint, card)} <= set(names), name
    done = _run(
        [sys.executable, "-m", "barbu_env.cli", "eval",
         "--agents", "ppo,heuristic,heuristic,heuristic", "--games", "4", "--workers", "1", "--no-progress"],
        cwd=elsewhere,
        env=env,
    )  # fmt: skip
    assert "ppo" in done.stdout
