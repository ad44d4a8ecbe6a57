"""A feature whose extra is not installed fails with one line naming the extra
(``barbu_env.extras``), and the features of the core install do not need the extras.

The absent extras are simulated in a subprocess that blocks their packages
(``sys.modules[name] = None`` makes ``import name`` raise ``ModuleNotFoundError``, as an
absent package does) before importing barbu. ``tests/test_wheel.py`` checks the same in a
real core install of the wheel (slow)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from barbu_env.agents.pretrained import pretrained_path
from barbu_env.extras import MissingExtraError, require

ROOT = Path(__file__).resolve().parent.parent
#: The packages of the extras that the core install leaves out.
EXTRA_PACKAGES = (
    "torch",
    "stable_baselines3",
    "sb3_contrib",
    "tensorboard",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "imageio",
    "imageio_ffmpeg",
)


def test_require_returns_the_module_or_one_line_naming_the_extra():
    assert require("json", "train", "anything") is json
    with pytest.raises(MissingExtraError) as caught:
        require("barbu_absent_package.sub", "plot", "--plot")
    assert str(caught.value) == "--plot needs barbu_absent_package: pip install 'barbu[plot]'"
    assert isinstance(caught.value, ImportError) and "\n" not in str(caught.value)
    with pytest.raises(MissingExtraError, match=r"^x needs ray\[rllib\]: pip install 'barbu\[rllib\]'$"):
        require("barbu_absent_package", "rllib", "x", package="ray[rllib]")


def test_a_missing_extra_survives_a_trip_to_a_worker_process():
    error = pickle.loads(pickle.dumps(MissingExtraError("torch", "train", "the shipped policy 'ppo'")))
    assert isinstance(error, MissingExtraError)
    assert str(error) == "the shipped policy 'ppo' needs torch: pip install 'barbu[train]'"


def test_an_installed_package_that_fails_to_import_is_not_a_missing_extra(tmp_path, monkeypatch):
    (tmp_path / "barbu_broken_pkg.py").write_text("import barbu_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        require("barbu_broken_pkg", "train", "x")
    assert not isinstance(caught.value, MissingExtraError)
    assert caught.value.name == "barbu_absent_dependency"


#: Runs in a subprocess with the extras' packages blocked; prints a JSON report. A plug-in
#: declared under ``barbu.agent_loaders`` whose module imports a missing package sits on
#: the path (``sys.argv[1]``), as a third-party one could.
WITHOUT_EXTRAS = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None
sys.path.insert(0, sys.argv[1])
import contextlib, io
from barbu_env.agents import make_agent
from barbu_env.cli import main

report = {{}}
def error_of(call):
    try:
        call()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None
report["ppo"] = error_of(lambda: make_agent("ppo"))
report["ppo-finetuned"] = error_of(lambda: make_agent("ppo-finetuned"))
report["pt"] = error_of(lambda: make_agent(sys.argv[2]))
report["other file"] = error_of(lambda: make_agent(sys.argv[3]))
report["heuristic"] = type(make_agent("heuristic")).__name__
report["cli"] = {{}}
for name, argv in {commands!r}.items():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    report["cli"][name] = [code, out.getvalue(), err.getvalue()]
report["loaded"] = sorted(m for m in {blocked!r} if sys.modules.get(m) is not None)
print(json.dumps(report))
"""

COMMANDS = {
    "eval ppo": ["eval", "--agents", "ppo,heuristic,heuristic,heuristic", "--games", "4", "--workers", "1",
                 "--no-progress"],
    "eval --plot": ["eval", "--agents", "random,random,random,random", "--games", "4", "--workers", "1",
                    "--no-progress", "--plot", "never.png"],
    "league --plot": ["league", "--agents", "random,heuristic", "--games", "4", "--workers", "1", "--no-cache",
                      "--no-progress", "--plot", "never.png"],
    "train": ["train", "--config", str(ROOT / "configs" / "train" / "quick.yaml")],
    "serve": ["serve"],
}  # fmt: skip


def test_without_the_extras_each_feature_that_needs_one_fails_with_one_line_naming_it(tmp_path):
    plugin = tmp_path / "plugin"
    (plugin / "barbu_test_plugin-0.dist-info").mkdir(parents=True)
    (plugin / "barbu_test_plugin-0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: barbu-test-plugin\nVersion: 0\n"
    )
    (plugin / "barbu_test_plugin-0.dist-info" / "entry_points.txt").write_text(
        "[barbu.agent_loaders]\nbroken = barbu_test_plugin:load\n"
    )
    (plugin / "barbu_test_plugin.py").write_text("import barbu_absent_dependency\n\ndef load(path, **_):\n    pass\n")
    other = tmp_path / "notes.txt"
    other.write_text("not an agent\n")
    script = WITHOUT_EXTRAS.format(blocked=EXTRA_PACKAGES, commands=COMMANDS)
    done = subprocess.run(
        [sys.executable, "-c", script, str(plugin), str(pretrained_path("ppo")), str(other)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    train = "pip install 'barbu[train]'"
    assert report["ppo"] == ["MissingExtraError", f"the shipped policy 'ppo' needs torch: {train}"]
    assert report["ppo-finetuned"] == ["MissingExtraError", f"the shipped policy 'ppo-finetuned' needs torch: {train}"]
    assert report["pt"] == ["MissingExtraError", f"the torch checkpoint ppo.pt needs torch: {train}"]
    # the other loaders still run: a file none of them handles says so, naming the plug-in that failed
    kind, message = report["other file"]
    assert kind == "ValueError" and message.startswith(f"no loader handles the file {str(other)!r}")
    assert "broken: barbu_test_plugin:load" in message and "barbu_absent_dependency" in message
    assert report["heuristic"] == "HeuristicAgent"
    expected = {
        "eval ppo": f"barbu eval: error: the shipped policy 'ppo' needs torch: {train}\n",
        "eval --plot": "barbu eval: error: --plot needs matplotlib: pip install 'barbu[plot]'\n",
        "league --plot": "barbu league: error: --plot needs matplotlib: pip install 'barbu[plot]'\n",
        "train": f"barbu train: error: barbu train needs torch: {train}\n",
        "serve": "barbu serve: error: barbu serve needs fastapi: pip install 'barbu[web]'\n",
    }
    for name, (code, out, err) in report["cli"].items():
        assert (code, err) == (1, expected[name]), name
        assert out == "", f"{name}: the missing extra is found before anything is played"
    assert report["loaded"] == []
    assert not (tmp_path / "never.png").exists()


def test_writing_mp4_without_the_video_extra_names_it(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        sys.modules["imageio"] = None
        import numpy as np
        from barbu_env.frames import write_video
        try:
            write_video([np.zeros((8, 8, 3), np.uint8)], sys.argv[1])
        except ImportError as e:
            print(type(e).__name__, e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "clip.mp4")], capture_output=True, text=True, timeout=60
    )
    assert (
        done.stdout
        == "MissingExtraError writing MP4 (a .gif needs no extra) needs imageio: pip install 'barbu[video]'\n"
    )


def test_importing_the_rllib_adapter_without_the_rllib_extra_names_it():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["ray"] = None
        try:
            import barbu_env.rllib_env
        except ImportError as e:
            print(type(e).__name__, e)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout == "MissingExtraError barbu_env.rllib_env needs ray[rllib]: pip install 'barbu[rllib]'\n"
