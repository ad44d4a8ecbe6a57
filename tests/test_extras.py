"""A feature whose extra is not installed fails with one line naming the extra
(``barbu_env.util.extras``), and the features of the core install do not need the extras.

The absent extras are simulated in a subprocess that blocks their packages
(``sys.modules[name] = None`` makes ``import name`` raise ``ModuleNotFoundError``, as an
absent package does) before importing barbu; a partial install (Ray core without the
packages of ``ray[rllib]``) blocks one of the extra's packages only. ``tests/test_wheel.py`` checks the same in a
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
from barbu_env.util.extras import MissingExtraError, install_hint, needs, require

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


def test_the_hint_installs_the_extra_in_a_clone_of_barbu():
    # barbu is on no package index: "pip install 'barbu[plot]'" would find nothing (or another package)
    assert install_hint("plot") == 'pip install -c constraints.txt -e ".[plot]" (in barbu\'s clone)'
    assert (ROOT / "constraints.txt").is_file() and '"plot"' not in install_hint("train")


def test_require_returns_the_module_or_one_line_naming_the_extra():
    assert require("json", "train", "anything") is json
    with pytest.raises(MissingExtraError) as caught:
        require("barbu_absent_package.sub", "plot", "--plot")
    assert str(caught.value) == f"--plot needs barbu_absent_package: {install_hint('plot')}"
    assert isinstance(caught.value, ImportError) and "\n" not in str(caught.value)
    with pytest.raises(MissingExtraError) as caught:
        require("barbu_absent_package", "rllib", "x", package="ray[rllib]")
    assert str(caught.value) == f"x needs ray[rllib]: {install_hint('rllib')}"


def test_a_missing_extra_survives_a_trip_to_a_worker_process():
    error = pickle.loads(pickle.dumps(MissingExtraError("ray", "rllib", "x", "ray[rllib]", "tree")))
    assert isinstance(error, MissingExtraError)
    assert str(error) == f"x needs ray[rllib] (no module named 'tree'): {install_hint('rllib')}"


def test_a_package_whose_own_dependency_is_absent_is_a_missing_extra(tmp_path, monkeypatch):
    # a partial install (ray without ray[rllib]'s packages): the line names the extra and the module not found
    (tmp_path / "barbu_partial_pkg.py").write_text("import barbu_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as caught:
        require("barbu_partial_pkg", "rllib", "x", package="barbu_partial_pkg[extra]")
    expected = f"x needs barbu_partial_pkg[extra] (no module named 'barbu_absent_dependency'): {install_hint('rllib')}"
    assert str(caught.value) == expected
    with pytest.raises(MissingExtraError, match=r"^y needs barbu_absent_dependency: "):
        with needs("rllib", "y"):
            import barbu_partial_pkg  # noqa: F401


def test_a_package_that_rewords_its_missing_dependency_is_a_missing_extra(tmp_path, monkeypatch):
    # Ray's ray.tune without pandas: `raise ImportError("... some dependencies are missing") from exc`
    (tmp_path / "barbu_rewording_pkg.py").write_text(
        "try:\n    import barbu_absent_dependency\nexcept ImportError as exc:\n"
        "    raise ImportError('some dependencies are missing') from exc\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = f"x needs ray[rllib] (no module named 'barbu_absent_dependency'): {install_hint('rllib')}"
    with pytest.raises(MissingExtraError) as caught:
        require("barbu_rewording_pkg", "rllib", "x", package="ray[rllib]")
    assert str(caught.value) == expected
    with pytest.raises(MissingExtraError) as caught:
        with needs("rllib", "x", package="ray[rllib]"):
            import barbu_rewording_pkg  # noqa: F401
    assert str(caught.value) == expected


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
from barbu_env.cli.main import main

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


@pytest.mark.slow  # an interpreter without the extras
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
    train = install_hint("train")
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
        "eval --plot": f"barbu eval: error: --plot needs matplotlib: {install_hint('plot')}\n",
        "league --plot": f"barbu league: error: --plot needs matplotlib: {install_hint('plot')}\n",
        "train": f"barbu train: error: barbu train needs torch: {train}\n",
        "serve": f"barbu serve: error: barbu serve needs fastapi: {install_hint('web')}\n",
    }
    for name, (code, out, err) in report["cli"].items():
        assert (code, err) == (1, expected[name]), name
        assert out == "", f"{name}: the missing extra is found before anything is played"
    assert report["loaded"] == []
    assert not (tmp_path / "never.png").exists()


@pytest.mark.slow  # an interpreter
def test_writing_mp4_without_the_video_extra_names_it(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        sys.modules["imageio"] = None
        import numpy as np
        from barbu_env.view.frames import write_video
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
        done.stdout == f"MissingExtraError writing MP4 (a .gif needs no extra) needs imageio: {install_hint('video')}\n"
    )


#: Every module that imports an optional package when imported, a package blocked, and the
#: line its import raises then: (module, blocked, needed, extra). ``tree`` (dm-tree) and
#: ``tensordict`` stand for a partial install: Ray core without ``ray[rllib]``'s packages,
#: torch without TorchRL's.
ENTRY_POINTS = (
    ("barbu_env.envs.rllib_env", "ray", "ray[rllib]", "rllib"),
    ("examples.rllib_ppo", "tree", "ray[rllib] (no module named 'tree')", "rllib"),
    ("examples.torchrl_ppo", "tensordict", "torchrl (no module named 'tensordict')", "torchrl"),
    ("barbu_env.envs.openspiel", "pyspiel", "open_spiel", "openspiel"),
    ("barbu_env.play.web.server", "fastapi", "fastapi", "web"),
    ("examples.sb3_maskable_ppo", "sb3_contrib", "sb3_contrib", "train"),
    *(
        (module, "torch", "torch", "train")
        for module in (
            "barbu_models.policy",
            "barbu_training.ppo",
        )
    ),
)

#: Imports each module with its package blocked, in one subprocess (the modules of barbu
#: are forgotten between cases, the blocked package restored); prints one line per case.
IMPORT_EACH = """
import importlib, sys
for module, blocked in {cases!r}:
    saved = sys.modules.get(blocked)
    sys.modules[blocked] = None
    forget = ("barbu_training", "barbu_models", "benchmarks", "examples")
    for name in [m for m in sys.modules if m.partition(".")[0] in forget or m == module]:
        del sys.modules[name]
    try:
        importlib.import_module(module)
        print("imported")
    except ImportError as e:
        print(type(e).__name__, e)
    del sys.modules[blocked]
    if saved is not None:
        sys.modules[blocked] = saved
"""


@pytest.mark.slow  # an interpreter per module
def test_importing_each_optional_module_without_its_extra_names_the_extra():
    cases = [(module, blocked) for module, blocked, _, _ in ENTRY_POINTS]
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH.format(cases=cases)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    expected = [
        f"MissingExtraError {module} needs {needed}: {install_hint(extra)}" for module, _, needed, extra in ENTRY_POINTS
    ]
    assert done.stdout.splitlines() == expected


@pytest.mark.slow  # an interpreter starting a run
def test_barbu_train_without_matplotlib_says_so_before_training(tmp_path):
    # a partial install (torch without the rest of the train extra): the learning curve drawn at
    # the end of the run would fail after hours of training, so the command checks it first
    script = textwrap.dedent(
        """
        import sys
        sys.modules["matplotlib"] = None
        from barbu_env.cli.main import main
        sys.exit(main(["train", "--config", sys.argv[1], "--run-dir", sys.argv[2]]))
        """
    )
    config = ROOT / "configs" / "train" / "quick.yaml"
    done = subprocess.run(
        [sys.executable, "-c", script, str(config), str(tmp_path / "runs")], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"barbu train: error: barbu train needs matplotlib: {install_hint('train')}\n"
    assert not (tmp_path / "runs").exists()
