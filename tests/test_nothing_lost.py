"""Nothing lost: a full disk leaves old files whole and the results printed, Ctrl-C in
``barbu play`` still records the game, a refused command touches nothing, and bad
``--fps`` or ``--plot`` values are refused before any work.

The full disk is a file-size limit (``RLIMIT_FSIZE``) set in a subprocess before the
command runs (Python ignores ``SIGXFSZ``, so a write past the limit fails with ``EFBIG``,
"File too large", as one on a full disk fails with ``ENOSPC``): no root is needed. The
interrupts are real ``SIGINT`` signals sent to a ``barbu play`` subprocess once it shows,
on its unbuffered output, that the game is under way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from barbu_env.cli.main import main
from barbu_env.cli.play import _interrupts_between_moves
from barbu_env.evaluation.records import GameRecord, replay_record
from barbu_env.view.frames import FPS_RANGE, check_fps, write_video

RANDOM4 = "random,random,random,random"
OLD = '{"old": "results", "kept": true}\n' * 100  # 3.4 kB, under every limit below


def barbu_with_file_size_limit(args: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``barbu ARGS`` in a subprocess that may write no file past ``limit`` bytes."""
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from barbu_env.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def not_saved_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "not saved" in line]


# ---------------------------------------------------------------------- a full disk


def test_eval_out_on_a_full_disk_keeps_the_old_file_prints_the_table_and_names_the_file(tmp_path):
    (tmp_path / "res.json").write_text(OLD)
    done = barbu_with_file_size_limit(
        ["eval", "--agents", RANDOM4, "--games", "4", "--workers", "1", "--no-progress", "--out", "res.json"],
        4096,
        tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "Duplicate tournament: 4 games" in done.stdout and "random#1" in done.stdout  # the table came first
    assert (tmp_path / "res.json").read_text() == OLD  # byte for byte
    assert not_saved_lines(done.stderr) == [
        "barbu eval: not saved: could not write res.json: File too large (any old file there is unchanged)"
    ]
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]  # no temporary file left


def test_eval_records_on_a_full_disk_finish_the_tournament_and_say_so_once(tmp_path):
    # A record of a game is about 24 kB, the results of four games about 6 kB: every
    # record fails, the results are written, the table printed.
    done = barbu_with_file_size_limit(
        ["eval", "--agents", RANDOM4, "--games", "8", "--workers", "1", "--no-progress"]
        + ["--records", "recs", "--out", "res.json"],
        12_000,
        tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "random#1" in done.stdout and "results written to res.json" in done.stdout
    (line,) = not_saved_lines(done.stderr)
    assert "recs/game_00000.json" in line and "8 game records not saved (0 were)" in line
    assert list((tmp_path / "recs").iterdir()) == []  # no empty or cut-off record
    results = json.loads((tmp_path / "res.json").read_text())
    assert results["tournament"]["games"] == 8 and results["run"]["records_saved"] == 0
    assert "File too large" in results["run"]["records_not_saved"]


def test_play_record_on_a_full_disk_keeps_the_old_record(tmp_path):
    (tmp_path / "r.json").write_text(OLD)
    done = barbu_with_file_size_limit(
        ["play", "--agents", RANDOM4, "--seed", "1", "--hands", "4", "--record", "r.json"], 2048, tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "Hand 4 over" in done.stdout
    assert (tmp_path / "r.json").read_text() == OLD
    assert not_saved_lines(done.stderr) == [
        "barbu play: not saved: could not write r.json: File too large (any old file there is unchanged)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_league_cache_on_a_full_disk_does_not_stop_the_league(tmp_path):
    done = barbu_with_file_size_limit(
        ["league", "--agents", "random,heuristic", "--games", "4", "--workers", "1", "--no-progress"]
        + ["--cache", "cache"],
        1024,
        tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "Ratings: points per game" in done.stdout and "3 formats played" in done.stdout
    (line,) = not_saved_lines(done.stderr)
    assert line.startswith("barbu league: not saved: could not write cache/") and "3 pairing results" in line
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_clip_on_a_full_disk_leaves_the_old_one_and_names_it(tmp_path):
    (tmp_path / "clip.gif").write_bytes(b"GIF89a old clip")
    code = (
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from barbu_env.util.files import OutputError\n"
        "from barbu_env.view.frames import write_video\n"
        "frames = [np.random.default_rng(i).integers(0, 256, (96, 96, 3), dtype=np.uint8) for i in range(4)]\n"
        "try:\n"
        "    write_video(frames, 'clip.gif', fps=2)\n"
        "except OutputError as e:\n"
        "    print('ERR', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.startswith("ERR could not write clip.gif: File too large"), done.stderr
    assert (tmp_path / "clip.gif").read_bytes() == b"GIF89a old clip"
    assert [p.name for p in tmp_path.iterdir()] == ["clip.gif"]


# ---------------------------------------------------------------------- Ctrl-C in play


def start_play(args: list[str], cwd: Path, script: str | None = None) -> subprocess.Popen[str]:
    """``barbu play ARGS`` (or ``script`` with them) with unbuffered output."""
    command = [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "barbu_env.cli.main", *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def read_until(process: subprocess.Popen[str], marker: str) -> str:
    seen = ""
    while marker not in seen:
        char = process.stdout.read(1)
        assert char, f"the game ended before {marker!r}: {seen[-300:]}"
        seen += char
    return seen


def interrupt(process: subprocess.Popen[str]) -> tuple[str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return out, err


def test_ctrl_c_while_a_human_types_writes_a_record_that_replays(tmp_path, capsys):
    play = start_play(["play", "--agents", "random,random,random,human", "--seed", "3", "--record", "r.json"], tmp_path)
    read_until(play, "Your turn")
    out, err = interrupt(play)
    assert play.returncode == 130 and err == "barbu play: interrupted\n"
    assert "record written to r.json (0 hands, unfinished)" in out
    record = GameRecord.load(tmp_path / "r.json")
    assert record.finished is False and record.metadata["stopped"] == "interrupted"
    assert len(record.actions) >= 1 and record.hands == []
    assert main(["replay", str(tmp_path / "r.json")]) == 0
    shown = capsys.readouterr().out
    assert "Unfinished: stopped in hand 1" in shown and "the scores of an unfinished game match" in shown


#: ``barbu play`` with an agent, ``stall``, that plays at random and at its 40th decision
#: (in hand 3 or so) says so and thinks for a minute.
STALLING_PLAY = textwrap.dedent(
    """
    import sys, time
    from barbu_env.agents import make_agent
    from barbu_env.agents.registry import register

    class Stall:
        def __init__(self, seed):
            self.inner, self.decisions = make_agent("random", seed=seed), 0

        def act(self, observation, agent=None):
            self.decisions += 1
            if self.decisions == 40:
                print("STALLING", flush=True)
                time.sleep(60)
            return self.inner.act(observation, agent)

    register("stall")(lambda seed=0, **_: Stall(seed))
    from barbu_env.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_ctrl_c_while_an_agent_thinks_records_the_finished_hands_and_the_hand_under_way(tmp_path):
    play = start_play(
        ["play", "--agents", "stall,random,random,random", "--seed", "5", "--record", "r.json"], tmp_path, STALLING_PLAY
    )
    read_until(play, "STALLING")
    out, err = interrupt(play)
    assert play.returncode == 130, err
    record = GameRecord.load(tmp_path / "r.json")
    assert not record.finished and len(record.hands) >= 1 and len(record.deals) == len(record.hands) + 1
    hands, scores = replay_record(record)  # through the environment, to where it stopped
    assert len(hands) == len(record.hands) and scores == record.final_scores != [0, 0, 0, 0]


def test_a_ctrl_c_while_an_action_is_applied_stops_the_game_at_the_next_choice():
    class Counting:
        def __init__(self):
            self.calls = 0

        def act(self, observation, agent=None):
            self.calls += 1
            return 7

    agent = Counting()
    with _interrupts_between_moves([agent]) as (seated,):
        assert seated.act({}) == 7
        try:
            os.kill(os.getpid(), signal.SIGINT)  # between two choices: as if an action were being applied
        except KeyboardInterrupt:
            pytest.fail("Ctrl-C stopped the game while an action was being applied")
        with pytest.raises(KeyboardInterrupt):
            seated.act({})  # it comes here, before the agent is asked
    assert agent.calls == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


def test_a_game_played_to_its_end_is_recorded_finished(tmp_path):
    assert main(["play", "--agents", RANDOM4, "--seed", "2", "--hands", "3", "--record", str(tmp_path / "r.json")]) == 0
    record = GameRecord.load(tmp_path / "r.json")
    assert record.finished and len(record.hands) == 3 and "stopped" not in record.metadata
    assert json.loads((tmp_path / "r.json").read_text())["finished"] is True


# ---------------------------------------------------------------------- a refused command touches nothing


def test_a_refused_command_leaves_an_existing_out_file_untouched(tmp_path, capsys):
    out = tmp_path / "res.json"
    out.write_text(OLD)
    os.utime(out, (1_000_000_000, 1_000_000_000))
    with pytest.raises(SystemExit):
        main(["eval", "--agents", RANDOM4, "--games", "0", "--out", str(out), "--plot", str(out)])
    capsys.readouterr()
    assert out.read_text() == OLD and out.stat().st_mtime == 1_000_000_000


def test_an_out_file_in_a_missing_folder_is_refused_and_nothing_is_made(tmp_path, capsys):
    assert main(["eval", "--agents", RANDOM4, "--games", "4", "--out", str(tmp_path / "no" / "res.json")]) == 1
    assert "cannot write there (no folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- refused before any work


@pytest.mark.parametrize("fps", ["0.001", "0.05", "51", "1e300"])
def test_an_fps_out_of_range_is_one_line_before_the_record_is_read(tmp_path, fps, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["replay", str(tmp_path / "missing.json"), "--video", str(tmp_path / "v.gif"), "--fps", fps])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "frames per second run from 0.1 to 50" in err
    assert list(tmp_path.iterdir()) == []


def test_fps_at_the_ends_of_its_range_makes_a_clip(tmp_path, capsys):
    low, high = FPS_RANGE
    assert check_fps(low) == low and check_fps(high) == high
    same = [np.zeros((32, 32, 3), np.uint8)] * 40  # identical frames: Pillow adds up their times
    assert write_video(same, tmp_path / "slow.gif", fps=low) == 40
    assert write_video(same, tmp_path / "fast.gif", fps=high) == 40
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "0.1 (a frame every ten seconds) to 50" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", ["eval", "league"])
def test_a_plot_of_an_unknown_image_format_is_refused_before_any_game(tmp_path, command, capsys):
    agents = RANDOM4 if command == "eval" else "random,heuristic"
    assert main([command, "--agents", agents, "--games", "4", "--no-progress", "--plot", str(tmp_path / "x.bad")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # no game played, no table
    (line,) = captured.err.splitlines()
    assert "a plot file ends in .png, .pdf, .svg" in line and "not '.bad'" in line
    assert list(tmp_path.iterdir()) == []
