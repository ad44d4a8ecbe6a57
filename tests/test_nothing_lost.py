"""Nothing lost: a full disk leaves old files whole and the results printed, Ctrl-C in
``barbu play`` still records the game, a refused command touches nothing, and a bad
``--plot`` is refused before any work (the other writers' full disk:
tests/test_files.py, tests/test_training_nothing_lost.py).

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

import pytest

from barbu_env.cli.main import main
from barbu_env.cli.play import _interrupts_between_moves
from barbu_env.evaluation.records import GameRecord, replay_record

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


@pytest.mark.slow  # an interpreter with a file-size limit
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


@pytest.mark.slow  # an interpreter playing a game
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


@pytest.mark.slow  # an interpreter playing a game
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


# ---------------------------------------------------------------------- refused before any work


def test_a_plot_of_an_unknown_image_format_is_refused_before_any_game(tmp_path, capsys):
    assert main(["eval", "--agents", RANDOM4, "--games", "4", "--no-progress", "--plot", str(tmp_path / "x.bad")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # no game played, no table
    (line,) = captured.err.splitlines()
    assert "a plot file ends in .png, .pdf, .svg" in line and "not '.bad'" in line
    assert list(tmp_path.iterdir()) == []
