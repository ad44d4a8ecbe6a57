"""Bad command lines end in one clear line, never a traceback (issue 27, item 8), and the
rules' point switches are bounded so that no score leaves the engine's number types.

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
        "three agents": record("three.json", agents=["a", "b", "c"]),
        "huge rule": record("huge.json", rules={**good["rules"], "barbu_points": 10**30}),
        "a file": record("not_a_folder.json"),
    }
    (d / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    out["nested"] = str(d / "nested.json")
    out["missing"] = str(d / "no_such_folder" / "out.json")
    return out


# name: (argv from the files, the reason the error line must name, standard input closed)
ROWS = {
    "replay, three agent names": (lambda f: ["replay", f["three agents"]], "list of 4 agent names", False),
    "replay, JSON nested deeply": (lambda f: ["replay", f["nested"]], "nested too deeply", False),
    "replay, huge rule integer": (lambda f: ["replay", f["huge rule"]], "'barbu_points' must be an integer in", False),
    "replay, video to a missing folder": (
        lambda f: ["replay", f["record"], "--video", f["missing"][:-5] + ".gif"],
        "--video",
        False,
    ),
    "replay, fps not a number": (
        lambda f: ["replay", f["record"], "--fps", "nan", "--video", "x.gif"],
        "argument --fps",
        False,
    ),
    "eval, rules file missing": (
        lambda f: ["eval", "--agents", FOUR, "--games", "4", "--rules", f["missing"][:-5] + ".yaml"],
        "not found",
        False,
    ),
    "eval, no workers": (
        lambda f: ["eval", "--agents", FOUR, "--games", "4", "--workers", "0", "--no-progress"],
        "argument --workers",
        False,
    ),
    "eval, agent parameter of the wrong kind": (
        lambda f: (
            ["eval", "--agents", "ppo:deterministic=maybe,random,random,random", "--games", "4"]
            + ["--workers", "1", "--no-progress"]
        ),
        "parameter deterministic takes true or false, not 'maybe'",
        False,
    ),
    "eval, out to a missing folder": (
        lambda f: ["eval", "--agents", FOUR, "--games", "4", "--workers", "1", "--no-progress", "--out", f["missing"]],
        "--out",
        False,
    ),
    "eval, unknown device": (
        lambda f: ["eval", "--agents", FOUR, "--games", "4", "--workers", "1", "--no-progress", "--device", "gpu"],
        "argument --device",
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
    "play, record to a missing folder": (
        lambda f: ["play", "--agents", FOUR, "--hands", "1", "--seed", "1", "--record", f["missing"]],
        "--record",
        False,
    ),
    "play, negative seed": (lambda f: ["play", "--agents", FOUR, "--hands", "1", "--seed", "-5"], "--seed", False),
    "play, standard input closed": (lambda f: ["play", "--seed", "1"], "standard input is closed", True),
    "serve, port out of range": (lambda f: ["serve", "--port", "-1"], "argument --port", False),
    "bench, a core this process may not use": (
        lambda f: ["bench", "--pin-core", "100000", "--games", "1", "--pimc-games", "0"],
        "cannot pin to core 100000",
        False,
    ),
    "bench, json to a missing folder": (
        lambda f: ["bench", "--games", "1", "--no-pin", "--pimc-games", "0", "--json", f["missing"]],
        "--json",
        False,
    ),
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


@pytest.mark.parametrize("row", ROWS)
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


# ---------------------------------------------------------------------- the rules' bounds


def _extreme_rules(sign: int):
    """Rules with every point switch at its bound (same sign everywhere; Domino's spread at
    its widest), every pair free to redouble."""
    from barbu_env.game.rules import POINTS_LIMIT, Rules

    L = sign * POINTS_LIMIT
    return Rules(
        no_tricks_points=L,
        no_hearts_points=L,
        no_hearts_ace_points=L,
        no_queens_points=L,
        barbu_points=L,
        no_last_two_points=(L, L),
        trumps_points=L,
        domino_scores=(L, -L, -L, -L),
        redouble_pass=True,
    )


@pytest.mark.parametrize("switch", ["no_tricks_points", "barbu_points", "no_last_two_points", "domino_scores"])
def test_a_point_switch_beyond_its_bound_is_a_rules_error_naming_it_and_its_range(switch):
    from barbu_env.game.rules import POINTS_LIMIT, Rules, RulesError, load_rules

    tuple_size = {"no_last_two_points": 2, "domino_scores": 4}.get(switch)
    for value in (POINTS_LIMIT + 1, -(POINTS_LIMIT + 1), 2**62, 10**30):
        bad = [0] * (tuple_size - 1) + [value] if tuple_size else value
        with pytest.raises(RulesError, match=rf"'{switch}' must be .* in -{POINTS_LIMIT}\.\.{POINTS_LIMIT}"):
            load_rules({switch: bad})
    edge = [POINTS_LIMIT] * tuple_size if tuple_size else -POINTS_LIMIT
    assert getattr(Rules.from_mapping({switch: edge}), switch) == (tuple(edge) if tuple_size else edge)


def test_the_bound_keeps_the_worst_game_inside_every_number_type_scores_pass_through():
    from barbu_env.evaluation import tournament
    from barbu_env.game.rules import POINTS_LIMIT, SCORE_LIMIT
    from barbu_env.game.vector import VectorBarbu

    env = VectorBarbu(1, seed=0)
    _, masks, _ = env.reset()
    *_, rewards, _, infos = env.step(np.asarray(masks).argmax(axis=1))
    for dtype in (rewards.dtype, infos["final_scores"].dtype):  # float32: exact integers up to 2**24
        exact = 2 ** (np.finfo(dtype).nmant + 1) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max
        assert SCORE_LIMIT <= exact
    assert SCORE_LIMIT <= np.iinfo(np.int32).max  # the tournament's per-game arrays
    assert "int32" in Path(tournament.__file__).read_text()  # (still the narrowest integer type there)
    for sign in (1, -1):
        worst = _extreme_rules(sign).score_bound()
        assert worst == 1160 * POINTS_LIMIT <= SCORE_LIMIT
    assert 1160 * 10 * POINTS_LIMIT > SCORE_LIMIT  # the next power of ten would not fit


def test_the_worst_hand_settles_exactly_at_its_bound_through_the_kernels():
    """Seat 0 declares No Tricks holding the 13 spades (it takes every trick), every pair
    is redoubled: it settles 13 p + 3 x 2 x 13 p = 91 p, the per-hand worst case, with
    p at the bound; the kernels' float32 rewards hold it exactly."""
    from barbu_env.game.engine import BarbuState
    from barbu_env.game.position import Positions
    from barbu_env.game.rules import POINTS_LIMIT
    from barbu_env.game.vector import VectorBarbu

    rules = _extreme_rules(-1)
    ranks = "23456789TJQKA"
    deal = [" ".join(r + "S" for r in ranks)] + [" ".join(r + s for r in ranks) for s in "CDH"]
    state = BarbuState.new_game(rules, rng=np.random.default_rng(0), first_declarer=0, deals=[deal])
    state.apply_action(52)  # No Tricks
    for _ in range(4):
        state.apply_action(83)  # names everyone: doubles, then each later seat (and the declarer) redoubles
    assert state.levels() == [[0, 2, 2, 2], [2, 0, 2, 2], [2, 2, 0, 2], [2, 2, 2, 0]]
    actions = [52, 83, 83, 83, 83]
    while not state.results:
        action = state.legal_actions()[0]
        actions.append(action)
        state.apply_action(action)
    result = state.results[0]
    assert list(result.raw) == [-13 * POINTS_LIMIT, 0, 0, 0]
    assert result.settled[0] == -91 * POINTS_LIMIT and abs(result.settled[0]) <= rules.score_bound()

    env = VectorBarbu(1, rules=rules, seed=0)
    env.load(Positions.from_state(BarbuState.new_game(rules, first_declarer=0, deals=[deal])))
    for action in actions:
        *_, rewards, _, _ = env.step(np.array([action]))
    assert rewards.tolist()[0] == [float(v) for v in result.settled]


def test_no_score_of_random_games_exceeds_the_bound_of_their_rules():
    from barbu_env.game.engine import BarbuState
    from barbu_env.game.rules import POINTS_LIMIT, Rules

    rng = np.random.default_rng(27)
    for _ in range(6):
        v = [int(x) for x in rng.integers(-POINTS_LIMIT, POINTS_LIMIT + 1, size=12)]
        rules = Rules(
            no_tricks_points=v[0],
            no_hearts_points=v[1],
            no_hearts_ace_points=v[2],
            no_queens_points=v[3],
            barbu_points=v[4],
            no_last_two_points=(v[5], v[6]),
            trumps_points=v[7],
            domino_scores=tuple(v[8:12]),
            doubling_targets=str(rng.choice(["anyone", "declarer_only"])),
        )
        state = BarbuState.new_game(rules, rng=rng)
        while not state.is_terminal:
            legal = state.legal_actions()
            state.apply_action(legal[-1] if rng.random() < 0.7 else legal[rng.integers(len(legal))])  # doubles often
        seen = [abs(x) for r in state.results for x in (*r.raw, *r.settled)] + [abs(x) for x in state.scores]
        assert max(seen) <= rules.score_bound()


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


def test_agent_parameters_of_the_wrong_kind_are_refused_with_what_they_take():
    from barbu_env.agents import make_agent

    for spec, message in [
        ("pimc:baseline=maybe", "parameter baseline takes true or false, not 'maybe'"),
        ("pimc:worlds=2.5", "parameter worlds takes an integer, not 2.5"),
        ("pimc:time_limit=soon", "parameter time_limit takes a number or none, not 'soon'"),
        ("heuristic:double_margin=true", "parameter double_margin takes a number, not True"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_agent(spec)
    assert make_agent("heuristic:double_margin=1").double_margin == 1  # an int is a number
    assert make_agent("pimc:time_limit=none,worlds=4").time_limit is None


def test_serve_refuses_a_bad_host_or_a_port_in_use_in_one_line_before_it_announces_an_address(capsys):
    import socket

    from barbu_env.cli.main import main

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    table = ["serve", "--agents", "human,random,random,random"]
    try:
        for extra, said in (
            (["--port", str(taken.getsockname()[1])], "cannot listen on '127.0.0.1' port"),
            (["--host", "a b"], "--host 'a b'"),
            (["--host", "a" * 100], "is not a host name or address"),
            (["--host", "224.0.0.1"], "is a multicast or broadcast address"),
            (["--host", "255.255.255.255"], "is a multicast or broadcast address"),
        ):
            assert main([*table, *extra]) == 1
            captured = capsys.readouterr()
            assert said in captured.err and captured.err.count("\n") == 1 and "Barbu table at" not in captured.out
    finally:
        taken.close()


def _subnet_broadcast() -> str | None:
    """A broadcast address of this machine's IPv4 subnets (from ``ip``), if it has one."""
    import re
    import shutil
    import subprocess

    if shutil.which("ip") is None:
        return None
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    found = re.findall(r" brd (\d+\.\d+\.\d+\.\d+)", out)
    return found[0] if found else None


@pytest.mark.parametrize(
    "host, said",
    [
        pytest.param(
            "::ffff:224.0.0.1", "is a multicast or broadcast address", marks=pytest.mark.skipif("not _has_ipv6()")
        ),
        pytest.param(
            "::ffff:255.255.255.255",
            "is a multicast or broadcast address",
            marks=pytest.mark.skipif("not _has_ipv6()"),
        ),
        pytest.param(
            "SUBNET", "nothing connects to it", marks=pytest.mark.skipif("_subnet_broadcast() is None")
        ),  # binds, and no client can reach it
    ],
)
def test_serve_refuses_an_address_that_binds_but_no_client_can_reach(host, said):
    """Where ``serve`` gets its socket (its one-line refusals are above): a socket it took
    on such an address would be served for ever, with an address announced that no
    browser opens."""
    from barbu_env.cli.serve import _listening_socket

    host = _subnet_broadcast() if host == "SUBNET" else host
    with pytest.raises((OSError, ValueError), match=said):
        _listening_socket(host, 0, 8).close()


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
        (None, "127.0.0.1", None),
        ("0.0.0.0", "127.0.0.1", "IPv4"),
        pytest.param(
            "::ffff:0.0.0.0", "127.0.0.1", "IPv4", marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6")
        ),
        pytest.param("::", "[::1]", "IPv6", marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback")),
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
