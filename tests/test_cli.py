"""The ``barbu`` command (barbu_env/cli/main.py), run in-process through ``main([...])``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from barbu_env.cli.main import main


def test_eval_prints_a_table_and_writes_json_and_a_plot(tmp_path, capsys):
    out, plot = tmp_path / "X.json", tmp_path / "X.png"
    code = main(
        [
            "eval",
            "--agents",
            "random,random,random,random",
            "--games",
            "8",
            "--seed",
            "1",
            "--out",
            str(out),
            "--plot",
            str(plot),
            "--no-progress",
            "--workers",
            "1",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "Duplicate tournament: 8 games = 2 deal sets x 4 seatings" in printed
    assert "random#4" in printed and "Head to head" in printed
    doc = json.loads(out.read_text())
    assert doc["tournament"]["games"] == 8 and doc["tournament"]["seed"] == 1
    assert len(doc["games"]) == 8
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


def test_eval_saves_records_that_replay_prints(tmp_path, capsys):
    records = tmp_path / "games"
    assert (
        main(
            [
                "eval",
                "--agents",
                "heuristic,random,random,random",
                "--games",
                "4",
                "--seed",
                "3",
                "--records",
                str(records),
                "--record-games",
                "2",
                "--no-progress",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    files = sorted(records.glob("*.json"))
    assert [f.name for f in files] == ["game_00000.json", "game_00001.json"]
    capsys.readouterr()

    assert main(["replay", str(files[1])]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\nHand ") == 28
    assert "Seats: P0 random#3, P1 heuristic" in printed  # seating 1 moved everyone one seat left
    assert "Trick  1" in printed and "Settled" in printed and "Final scores" in printed
    assert "match the record" in printed

    assert main(["replay", str(files[0]), "--hand", "7", "--hand", "8"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\nHand ") == 2 and "Hand 7/28" in printed and "Hand 8/28" in printed


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out
    commands = {"eval", "league", "replay", "bench", "train", "exploit", "play", "serve"}
    for command in commands:
        assert command in printed


@pytest.mark.slow  # an interpreter
def test_help_does_not_import_the_heavy_modules():
    code = (
        "import sys\n"
        "from barbu_env.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'matplotlib', 'pettingzoo', 'barbu_env.evaluation.tournament')\n"
        "         if m in sys.modules]\n"
        "print(heavy, file=sys.stderr)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_version_and_exits_0(flag, capsys):
    import barbu_env

    with pytest.raises(SystemExit) as exit_:
        main([flag])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"barbu {barbu_env.__version__}\n"


@pytest.mark.slow  # two interpreters
def test_the_barbu_script_runs_bench_from_a_checkout_and_says_where_elsewhere(tmp_path):
    """The installed ``barbu`` script (whose import path is its own folder, not the working
    one) finds ``benchmarks/`` in the checkout it is run from, or in a folder above."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = shutil.which("barbu", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the barbu script is not installed beside this Python")
    root = Path(__file__).resolve().parents[1]
    for where in (root, root / "docs"):
        done = subprocess.run([script, "bench", "--help"], cwd=where, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "usage: barbu bench" in done.stdout, done.stderr[-300:]
    (tmp_path / "benchmarks").mkdir()  # another project's benchmarks: never run
    (tmp_path / "benchmarks" / "bench.py").write_text("raise SystemExit(7)\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    done = subprocess.run([script, "bench", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "runs from a checkout of the repository" in done.stderr
