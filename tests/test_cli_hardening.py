"""Bad command lines end in one clear line, never a traceback, and nothing is printed first.

The table drives ``barbu_env.cli.main.main`` in this process (a subprocess only where standard
input must be closed); each row is a command line, the files it needs and the reason its
one line on stderr must give. Nothing may be printed on stdout first: a refusal comes
before any game is played. The table's imports are only ``main``, so that it also runs
against an older tree (``PYTHONPATH``), where every row fails.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

from barbu_env.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
FOUR = "random,random,random,random"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Records and rules files the rows read: a short real record and broken copies."""
    from barbu_env.evaluation.records import GameRecord
    from barbu_env.game.engine import BarbuState

    d = tmp_path_factory.mktemp("hardening")
    state = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0)
    for _ in range(30):
        state.apply_action(state.legal_actions()[0])
    good = GameRecord.from_state(state, agents=["a", "b", "c", "d"]).to_dict()

    def record(name: str, **changes) -> str:
        (d / name).write_text(json.dumps({**good, **changes}))
        return str(d / name)

    out = {
        "record": record("good.json"),
        "a file": record("not_a_folder.json"),
        "version 9": record("v9.json", version=9),
        "scores of text": record("typed.json", final_scores="all zero"),
    }
    (d / "weights.pt").write_bytes(b"these are not weights\n")
    out["not a checkpoint"] = str(d / "weights.pt")
    (d / "not_yaml.yaml").write_text("seed: [1, 2\n")
    out["not yaml"] = str(d / "not_yaml.yaml")
    out["missing"] = str(d / "no_such_folder" / "out.json")
    return out


# name: (argv from the files, the reason the error line must name, standard input closed)
ROWS = {
    "train, config missing": (lambda f: ["train", "--config", "missing.yaml"], "missing.yaml", False),
    "train, config not YAML": (lambda f: ["train", "--config", f["not yaml"]], "not valid YAML", False),
    "train, resume not a checkpoint": (
        lambda f: ["train", "--resume", f["not a checkpoint"]],
        "not a barbu checkpoint",
        False,
    ),
    "replay, record version": (lambda f: ["replay", f["version 9"]], "version 9 is not supported", False),
    "replay, record field type": (
        lambda f: ["replay", f["scores of text"]],
        "'final_scores' must be a list of 4 integers",
        False,
    ),
    "eval, exactly four agents": (
        lambda f: ["eval", "--agents", "random,random,random", "--games", "4", "--no-progress"],
        "exactly 4 agents",
        False,
    ),
    "eval, --record-games without --records": (
        lambda f: ["eval", "--agents", FOUR, "--record-games", "3"],
        "--record-games needs --records",
        False,
    ),
    "eval, out to a missing folder": (
        lambda f: ["eval", "--agents", FOUR, "--games", "4", "--workers", "1", "--no-progress", "--out", f["missing"]],
        "--out",
        False,
    ),
    "league, cache is a file": (
        lambda f: (
            ["league", "--agents", "random,heuristic", "--games", "4", "--workers", "1", "--no-progress"]
            + ["--cache", f["a file"]]
        ),
        "--cache",
        False,
    ),
    "play, standard input closed": (lambda f: ["play", "--seed", "1"], "standard input is closed", True),
}


def _run(argv: list[str], stdin_closed: bool, capsys) -> tuple[object, str, str]:
    """Exit status, stdout and stderr of ``barbu ARGV``; an exception escaping ``main`` is
    a traceback on stderr, as the installed command would print it."""
    if stdin_closed:  # a subprocess: this process's standard input is pytest's
        script = 'exec "$0" -m barbu_env.cli.main "$@" 0<&-'
        done = subprocess.run(
            ["sh", "-c", script, sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        return done.returncode, done.stdout, done.stderr
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    except Exception:
        code = "an exception"
        print(traceback.format_exc(), file=sys.stderr)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("row", [r if not ROWS[r][2] else pytest.param(r, marks=pytest.mark.slow) for r in ROWS])
def test_a_bad_command_line_is_refused_on_one_line_before_anything_runs(row, files, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, reason, stdin_closed = ROWS[row]
    argv = argv(files)
    code, out, err = _run(argv, stdin_closed, capsys)
    lines = err.strip().splitlines()
    assert code not in (0, None), (code, err)
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"barbu {argv[0]}: error: ") and reason in lines[0], lines[0]
    assert out == "", out  # refused before playing, measuring or serving anything
    assert not (tmp_path / "runs").exists()  # a run that cannot start leaves no folder behind


# ---------------------------------------------------------------------- what a record prints


def test_a_records_names_and_metadata_print_with_control_characters_escaped(files):
    from barbu_env.evaluation.records import GameRecord, render_record

    record = GameRecord.load(files["record"])
    record.agents = ["a\x1b[2J\x1b[31mred", "b\nP9 fake seat", "c\x07", "d\u202eevil"]
    record.metadata = {"seed\x1b]0;title\x07": "x\ry", "deal": ["\x1b[1m"]}
    text = render_record(record)
    plain = render_record(GameRecord.load(files["record"]))
    assert not any(not c.isprintable() and c != "\n" for c in text)
    assert len(text.splitlines()) == len(plain.splitlines()) + 1  # the metadata line, nothing more
    assert "P0 a\\x1b[2J\\x1b[31mred" in text and "P1 b\\nP9 fake seat" in text and "P3 d\\u202eevil" in text
    assert "seed\\x1b]0;title\\x07 x\\ry" in text


def test_serve_refuses_a_bad_host_or_a_port_in_use_in_one_line_before_it_announces_an_address(capsys):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    table = ["serve", "--agents", "human,random,random,random"]
    try:
        for extra, said in (
            (["--port", str(taken.getsockname()[1])], "cannot listen on '127.0.0.1' port"),
            (["--host", "a b"], "--host 'a b'"),
        ):
            assert main([*table, *extra]) == 1
            captured = capsys.readouterr()
            assert said in captured.err and captured.err.count("\n") == 1 and "Barbu table at" not in captured.out
    finally:
        taken.close()


def _has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize(
    "host, shown, every",
    [
        pytest.param(None, "127.0.0.1", None, marks=pytest.mark.slow),
        pytest.param("0.0.0.0", "127.0.0.1", "IPv4", marks=pytest.mark.slow),
        pytest.param(
            "::",
            "[::1]",
            "IPv6",
            marks=[pytest.mark.slow, pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback")],
        ),
    ],
)
def test_serve_listens_before_it_announces_an_address_a_browser_here_opens(host, shown, every):
    """A client that connects as soon as it reads the address is answered; a server on
    every address announces the loopback one (no browser opens 0.0.0.0) and says so."""
    import http.client
    import re
    import subprocess
    import sys

    server = subprocess.Popen(
        [sys.executable, "-m", "barbu_env.cli.main", "serve", "--agents", "human,random,random,random", "--port", "0"]
        + (["--host", host] if host else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        port = int(re.search(rf"http://{re.escape(shown)}:(\d+)/", line).group(1))
        assert ("listening on every" in line) == (every is not None) and (every or "") in line, line
        conn = http.client.HTTPConnection(shown.strip("[]"), port, timeout=20)
        conn.request("GET", "/api/setup")
        assert conn.getresponse().status == 200
    finally:
        server.terminate()
        server.wait(timeout=20)
