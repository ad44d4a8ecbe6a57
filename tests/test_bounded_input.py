"""What a stranger hands over cannot grow without bound, hang, or end in a traceback: an SB3
zip bomb is refused fast and small, every numeric agent parameter and command option has a
range checked before any work (``barbu_env.util.argtypes``), a pipe or ``/dev/zero`` given as a
record, a league cache entry or a model is refused unread, and every environment answers a
malformed ``reset`` option or action with its own one-line error."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from barbu_env.cli.main import main as barbu
from barbu_env.game.engine import IllegalActionError
from barbu_env.util.argtypes import AGENT_PARAMS, FLAGS, VECTOR_BENCH, Range, agent_params_table, flags_table, valid

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_hang():
    """Fail, instead of hanging, a test whose call blocks for over 20 s (a FIFO opened for
    reading blocks until a writer comes: the alarm's exception ends the wait)."""

    def alarm(signum, frame):
        raise TimeoutError("blocked for 20 s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------- SB3 zips

MB = 1 << 20


def write_zeros(z: zipfile.ZipFile, name: str, size: int) -> None:
    """A member of ``size`` zero bytes (a multiple of 16 MB), deflated (about 1,000 to 1),
    written in 16 MB chunks."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with z.open(info, "w") as f:
        chunk = bytes(16 * MB)
        for _ in range(size // len(chunk)):
            f.write(chunk)


def zip_bomb(path: Path, data_size: int, lie: int | None = None) -> Path:
    """An SB3-looking zip (``data`` and ``policy.pth``) whose ``data`` is ``data_size`` zero
    bytes; with ``lie``, its headers say ``data`` is ``lie`` bytes."""
    with zipfile.ZipFile(path, "w") as z:
        write_zeros(z, "data", data_size)
        z.writestr("policy.pth", b"{}")
    if lie is not None:  # the local header (size at 22) and the central directory entry (at 24)
        raw = bytearray(path.read_bytes())
        local = raw.index(b"PK\x03\x04")
        central = raw.index(b"PK\x01\x02")
        assert int.from_bytes(raw[local + 22 : local + 26], "little") == data_size
        raw[local + 22 : local + 26] = lie.to_bytes(4, "little")
        raw[central + 24 : central + 28] = lie.to_bytes(4, "little")
        path.write_bytes(bytes(raw))
    return path


MEASURE = """
import resource, sys, time
{prepare}
from barbu_env.agents import make_agent
import barbu_training.external_agents  # the loaders, imported before the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
try:
    make_agent(sys.argv[1], trust={trust})
    said = "loaded"
except ValueError as e:
    said = str(e)
seconds = time.perf_counter() - t
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(f"{{seconds}} {{grown}} {{said}}")
"""


def refusal(path: Path, trust: bool = False, prepare: str = "") -> tuple[float, float, str]:
    """Seconds, memory grown (MB, peak) and the message of loading ``path`` as an agent, in
    a fresh process."""
    code = MEASURE.format(prepare=prepare, trust=trust)
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seconds, grown, said = done.stdout.strip().split(" ", 2)
    return float(seconds), float(grown), said


def test_an_sb3_zip_bomb_is_refused_fast_and_small(tmp_path):
    # 256 MB of zeros in a zip of a quarter MB; the issue's 2 GiB one took 28 s and 4.3 GB.
    bomb = zip_bomb(tmp_path / "bomb.zip", 256 * MB)
    assert bomb.stat().st_size < 2 * MB
    seconds, grown, said = refusal(bomb)
    assert "its member 'data' is over 8,000,000 bytes decompressed" in said and "refused unread" in said
    assert seconds < 1 and grown < 32, (seconds, grown)


def test_a_zip_whose_header_lies_about_a_member_is_read_only_up_to_the_cap(tmp_path):
    liar = zip_bomb(tmp_path / "liar.zip", 64 * MB, lie=1000)
    seconds, grown, said = refusal(liar)
    assert "bomb" not in said and ("not a readable zip" in said or "over 8,000,000" in said), said
    assert seconds < 1 and grown < 32, (seconds, grown)


@pytest.fixture(scope="module")
def sb3_zip(tmp_path_factory) -> Path:
    pytest.importorskip("sb3_contrib")
    from tiny_runs import tiny_maskable_ppo

    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    tiny_maskable_ppo().save(path)
    return path


def test_a_trusted_sb3_model_with_a_bomb_for_weights_is_refused_before_sb3_reads_it(sb3_zip, tmp_path):
    bomb = tmp_path / "weights_bomb.zip"
    with zipfile.ZipFile(sb3_zip) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        for name in src.namelist():
            if name != "policy.pth":
                z.writestr(name, src.read(name))
        write_zeros(z, "policy.pth", 272 * MB)  # over the 256 MB cap
    seconds, grown, said = refusal(bomb, trust=True, prepare="import sb3_contrib")
    assert "its member 'policy.pth' is over 256,000,000 bytes decompressed" in said, said
    assert seconds < 1 and grown < 32, (seconds, grown)


def test_a_zip_with_too_many_members_is_refused_before_they_are_listed(tmp_path):
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as z:
        z.writestr("data", "{}")
        z.writestr("policy.pth", b"")
        for i in range(40):
            z.writestr(f"extra{i}", b"")
    from barbu_env.agents import make_agent

    with pytest.raises(ValueError, match="lists 42 members, an SB3 model at most 32"):
        make_agent(str(many))


def test_a_pipe_named_like_a_model_is_not_opened(tmp_path, no_hang):
    from barbu_env.agents import make_agent

    fifo = tmp_path / "model.zip"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="no loader handles the file"):
        make_agent(str(fifo))
    assert time.perf_counter() - start < 5  # not opened: opening it for reading would wait for a writer


# ---------------------------------------------------------------------- ranges of agent parameters


def outside(r: Range) -> list[object]:
    """Values just past either end of ``r``, and one far past the top."""
    step = 1 if r.integer else 0.5
    low = r.low if r.above else r.low - step
    return [low, r.high + step, r.high * 1000 + 10**9]


AGENT_CASES = [(a, p, v) for a, params in AGENT_PARAMS.items() for p, r in params.items() for v in outside(r)]


@pytest.mark.parametrize("agent, param, value", AGENT_CASES)
def test_an_agent_parameter_outside_its_range_is_refused_in_one_line_before_any_work(agent, param, value):
    from barbu_env.agents import make_agent

    start = time.perf_counter()
    with pytest.raises(ValueError) as refused:
        make_agent(f"{agent}:{param}={value}")
    message = str(refused.value)
    assert time.perf_counter() - start < 1
    assert "\n" not in message and len(message) < 200
    assert f"{param} must be {AGENT_PARAMS[agent][param].describe()}, not {value!r}" in message


def test_a_huge_container_given_as_a_number_is_quoted_from_its_first_items_only():
    """A refusal quotes what it was given in a few dozen characters, reading only the
    first items of a container, however many it holds."""
    shown = []

    class Item:
        def __repr__(self) -> str:
            shown.append(1)
            return "item"

    with pytest.raises(ValueError, match=r"^x must be an integer from 1 to 4,096, not \[item, item, .*\.\.\.$"):
        AGENT_PARAMS["pimc"]["worlds"].check([Item()] * 100_000, "x")
    assert 0 < len(shown) <= 16


def test_the_issue_s_pimc_worlds_are_refused_at_once_and_a_keyword_too():
    from barbu_env.agents import make_agent

    for worlds in (10**9, 3_000_000):
        with pytest.raises(ValueError, match=rf"pimc: worlds must be an integer from 1 to 4,096, not {worlds}$"):
            make_agent(f"pimc:worlds={worlds}")
    with pytest.raises(ValueError, match="worlds must be an integer from 1 to 4,096, not 5000"):
        make_agent("pimc", worlds=5000)
    assert make_agent("pimc:worlds=4096").worlds == 4096


def test_every_numeric_parameter_of_a_registered_agent_has_a_range():
    import inspect

    from barbu_env.agents.registry import _FACTORIES, _param_kinds

    numeric = {
        (name, p.name)
        for name, factory in _FACTORIES.items()
        for p in inspect.signature(factory).parameters.values()
        if p.name not in ("seed", "rules") and set(_param_kinds(p) or ()) & {"int", "float"}
    }
    ranged = {(a, p) for a, params in AGENT_PARAMS.items() for p in params}
    assert numeric == ranged


def test_a_search_in_parts_gives_the_values_of_one_search(monkeypatch):
    """pimc rolls out its worlds x actions in parts of ROUND_SLOTS games (bounded memory):
    the values are those of a search in one part."""
    from barbu_env.agents import pimc
    from barbu_env.game.engine import BarbuState

    state = BarbuState.new_game(rng=np.random.default_rng(3))
    rows = []
    while len(rows) < 3:
        legal = state.legal_actions()
        if len(legal) > 1:
            mask = np.zeros(85, dtype=bool)
            mask[legal] = True
            rows.append((state.observe(state.current_player), mask))
        state.apply_action(legal[-1])
    obs, masks = np.array([o for o, _ in rows]), np.array([m for _, m in rows])
    whole = pimc.PimcAgent(seed=1, worlds=24, baseline=False).search(obs, masks)
    monkeypatch.setattr(pimc, "ROUND_SLOTS", 50)  # parts of 2 worlds here
    parts = pimc.PimcAgent(seed=1, worlds=24, baseline=False).search(obs, masks)
    assert whole.keys() == parts.keys() and len(whole) == 3
    for i in whole:
        assert np.array_equal(whole[i][0], parts[i][0]) and np.array_equal(whole[i][1], parts[i][1])


# ---------------------------------------------------------------------- ranges of options

#: The least each command needs besides the option tried (options are checked while parsing,
#: before any of these is used).
NEEDS = {
    "eval": ["--agents", "random,random,random,random", "--workers", "1", "--no-progress"],
    "league": ["--agents", "random,heuristic", "--workers", "1", "--no-progress", "--no-cache"],
    "replay": ["no-such-record.json"],
    "play": ["--agents", "random,random,random,random"],
    "serve": [],
    "bench": ["--no-pin"],
    "exploit": ["--target", "heuristic"],
}
#: Checked by the library, not while parsing (its own one-line error, status 1).
CHECKED_BY_THE_TOURNAMENT = {("eval", "--games"), ("league", "--games")}


def run_command(command: str, argv: list[str], capsys) -> tuple[int, str]:
    if command == VECTOR_BENCH:
        from benchmarks.bench_vector_env import parse_args

        try:
            parse_args(argv)
        except SystemExit as e:
            return e.code, capsys.readouterr().err
        return 0, capsys.readouterr().err
    try:
        code = barbu([command, *NEEDS[command], *argv])
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


FLAG_CASES = [(c, o, v) for (c, o), r in FLAGS.items() for v in outside(r)]


@pytest.mark.parametrize("command, option, value", FLAG_CASES)
def test_an_option_outside_its_range_is_refused_in_one_line_before_any_work(
    command, option, value, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    code, err = run_command(command, [option, str(value)], capsys)
    assert not any(tmp_path.iterdir())  # no work began: nothing written where it runs
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    if (command, option) in CHECKED_BY_THE_TOURNAMENT:
        assert code == 1 and re.search("games must be at (most 10,000,000|least 1)", err), err
    elif option == "--fps":  # its own parser (barbu_env.view.frames.check_fps), after a positive number
        assert code == 2 and re.search("argument --fps: (frames per second run from 0.1 to 50|must be a finite)", err)
    else:
        assert code == 2 and f"argument {option}: must be {FLAGS[(command, option)].describe()}" in err, err


def test_a_value_of_thousands_of_digits_is_quoted_in_a_few_dozen_characters(capsys):
    code, err = run_command("bench", ["--batch", "9" * 5000], capsys)
    assert code == 2 and len(err) < 250 and "'99999" in err


@pytest.mark.parametrize("command", sorted({c for c, _ in FLAGS}))
def test_each_option_s_range_is_in_its_help(command, capsys):
    from benchmarks.bench_vector_env import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"]) if command == VECTOR_BENCH else barbu([command, "--help"])
    out = capsys.readouterr().out
    text = " ".join(out.split())
    for c, option in FLAGS:
        if c == command and option != "--fps":  # --fps says its range in its own words
            assert valid(c, option) in text, option


def test_the_table_s_bounds_are_those_the_library_checks():
    from barbu_env.evaluation.tournament.schedule import MAX_GAMES
    from barbu_env.view.frames import FPS_RANGE

    assert FLAGS[("eval", "--games")].high == FLAGS[("league", "--games")].high == MAX_GAMES
    assert (FLAGS[("replay", "--fps")].low, FLAGS[("replay", "--fps")].high) == FPS_RANGE


def test_the_docs_show_the_tables_as_written():
    security = (ROOT / "docs" / "security.md").read_text()
    agents = (ROOT / "docs" / "agents.md").read_text()
    assert flags_table() in security and agent_params_table() in security
    assert agent_params_table() in agents


# ---------------------------------------------------------------------- pipes and devices as files


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("source", ["fifo", "/dev/zero"])
def test_a_pipe_or_dev_zero_as_a_record_is_refused_unread(source, fifo, capsys, no_hang):
    path = str(fifo) if source == "fifo" else source
    assert barbu(["replay", path]) == 1
    err = capsys.readouterr().err
    assert (
        err == f"barbu replay: error: game record {path} is not a regular file (a pipe or a device?): refused unread\n"
    )


def test_a_record_over_its_limit_is_refused_unread(tmp_path):
    from barbu_env.evaluation.records import READ_LIMIT, GameRecord
    from barbu_env.util.files import InputError

    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(READ_LIMIT + 1)  # sparse: nothing written, nothing to read
    with pytest.raises(InputError, match="over the limit of 2,000,000: refused unread"):
        GameRecord.load(big)


@pytest.mark.parametrize("source", ["fifo", "/dev/zero", "big"])
def test_a_pipe_dev_zero_or_a_huge_file_as_a_league_cache_entry_is_played_again(source, fifo, tmp_path, no_hang):
    from barbu_env.evaluation.league import _from_cache, _key_file, cache_key
    from barbu_env.game.rules import load_rules

    specs = ["random", "heuristic", "heuristic", "heuristic"]
    key = cache_key(specs, 8, 0, load_rules("standard"))
    path = _key_file(tmp_path / "cache", key)
    path.parent.mkdir()
    if source == "fifo":
        fifo.rename(path)
    elif source == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as f:
            f.truncate(10**9)
    with pytest.warns(Warning, match="refused unread: playing it again") as caught:
        assert _from_cache(path, key, "1v3", specs, "random vs heuristic") is None
    assert len(caught) == 1 and str(path) in str(caught[0].message) and len(str(caught[0].message)) < 300


# ---------------------------------------------------------------------- environments

BAD_OPTIONS = ["str", [("deals", None)], 3]


def aec_env():
    from barbu_env.envs.aec import env

    e = env()
    e.reset(seed=0)
    return e


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=repr)
def test_reset_options_that_are_no_mapping_are_each_env_s_type_error(options):
    import gymnasium

    from barbu_env.envs.vector_gym import BarbuGymVectorEnv, BarbuVectorEnv

    envs = [
        aec_env(),
        gymnasium.make("Barbu-v1", opponents="random"),
        BarbuGymVectorEnv(2, opponents="random"),
        BarbuVectorEnv(2),
    ]
    for env in envs:
        with pytest.raises(TypeError, match=r"^reset options must be a dict \(or None\), not "):
            env.reset(seed=0, options=options)


def test_rllib_env_reset_and_step_errors_are_its_own():
    try:
        from barbu_env.envs.rllib_env import BarbuMultiAgentEnv
    except ImportError as e:  # ray[rllib] and all it needs (pandas, pyarrow, ...) not installed
        pytest.skip(f"RLlib cannot be imported: {e}")
    env = BarbuMultiAgentEnv()
    with pytest.raises(TypeError, match="reset options must be a dict"):
        env.reset(options="str")
    obs, _ = env.reset(seed=0)
    ((agent, first),) = obs.items()
    legal = int(np.flatnonzero(first["action_mask"])[0])
    for bad in (np.array([legal]), str(legal), True, float(legal)):
        with pytest.raises(IllegalActionError, match="is not an action id"):
            env.step({agent: bad})
    with pytest.raises(ValueError, match=f"the action of {agent}, the agent to act, not a dict of"):
        env.step({"player_9": legal})
    with pytest.raises(ValueError, match=f"the action of {agent}"):
        env.step([legal])
    env.step({agent: np.int64(legal)})
    assert env.env.unwrapped.game.history[-1] == legal


def legal_action(env) -> int:
    return int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])


NOT_ACTIONS = {
    "shape (1,)": lambda a: np.array([a]),
    "float": float,
    "bool": lambda a: True,
    "string": str,
    "huge int": lambda a: 10**5000,
    "negative": lambda a: -1,
}


@pytest.mark.parametrize("illegal_action", ["raise", "random"])
@pytest.mark.parametrize("kind", NOT_ACTIONS)
def test_the_aec_env_refuses_what_is_no_action_naming_it_in_either_mode(kind, illegal_action):
    from barbu_env.envs.aec import env as make_env

    env = make_env(illegal_action=illegal_action)
    env.reset(seed=0)
    bad = NOT_ACTIONS[kind](legal_action(env))
    history = list(env.unwrapped.game.history)
    with pytest.raises(IllegalActionError, match=r"^action .{1,40} is not an action id: an integer 0\.\.84"):
        env.step(bad)
    assert env.unwrapped.game.history == history


@pytest.mark.parametrize("kind", ["0-d array", "numpy int"])
def test_every_env_takes_numpy_ints_and_0_d_arrays(kind):
    import gymnasium

    make = np.array if kind == "0-d array" else np.int64
    env = aec_env()
    action = legal_action(env)
    env.step(make(action))
    assert env.unwrapped.game.history[-1] == action
    gym = gymnasium.make("Barbu-v1", opponents="random")
    gym.reset(seed=0)
    action = int(np.flatnonzero(gym.unwrapped.action_masks())[0])
    assert "illegal_action" not in gym.step(make(action))[4]


@pytest.mark.parametrize("kind", ["shape (1,)", "bool", "string", "huge int"])
def test_barbu_v1_refuses_what_is_no_action_naming_it(kind):
    import gymnasium

    env = gymnasium.make("Barbu-v1", opponents="random", illegal_action="random")
    env.reset(seed=0)
    bad = NOT_ACTIONS[kind](int(np.flatnonzero(env.unwrapped.action_masks())[0]))
    with pytest.raises(ValueError, match=r"^action .{1,40} is not in Discrete\(85\)$"):
        env.step(bad)


def test_the_vector_env_refuses_a_ragged_or_infinite_batch_naming_it():
    from barbu_env.envs.vector_gym import BarbuGymVectorEnv

    env = BarbuGymVectorEnv(2, opponents="random")
    env.reset(seed=0)
    for bad in ([1, [2, 3]], np.array([np.inf, 1.0]), ["1", "2"], [True, False]):
        with pytest.raises(ValueError, match="^actions must be 2 ints, not "):
            env.step(bad)


def test_python_barbu_refuses_what_is_no_action_naming_it():
    pytest.importorskip("pyspiel")
    from barbu_env.envs.openspiel import load_game

    state = load_game().new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    action = state.legal_actions()[0]
    for make in NOT_ACTIONS.values():
        with pytest.raises(IllegalActionError, match=r"^action .{1,40} is not an action id"):
            state.clone().apply_action(make(action))
    for taken in (np.int64(action), np.array(action)):
        child = state.clone()
        child.apply_action(taken)
        assert child.history()[-1] == action


def test_the_record_and_model_readers_refuse_json_nested_deeply(tmp_path):
    from barbu_env.evaluation.records import GameRecord

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply|not JSON"):
        GameRecord.load(deep)
    model = tmp_path / "deep.zip"
    with zipfile.ZipFile(model, "w") as z:
        z.writestr("data", "[" * 100_000)
        z.writestr("policy.pth", b"")
    from barbu_env.agents import make_agent

    with pytest.raises(ValueError, match="its data is not JSON"):
        make_agent(str(model))


def _huge():
    return list(range(100_000))


@pytest.mark.parametrize(
    "call",
    [
        lambda: __import__("barbu_env.envs.gym_env", fromlist=["x"]).BarbuGymEnv(opponents=_huge()),
        lambda: __import__("barbu_env.envs.gym_env", fromlist=["x"]).BarbuGymEnv(seat=_huge()),
        lambda: __import__("barbu_env.envs.gym_env", fromlist=["x"]).BarbuGymEnv(render_mode="x" * 100_000),
        lambda: __import__("barbu_env.envs.aec", fromlist=["x"]).raw_env(observation="x" * 100_000),
        lambda: __import__("barbu_env.game.vector", fromlist=["x"]).VectorBarbu(num_games=_huge()),
        lambda: __import__("barbu_env.game.engine", fromlist=["x"]).BarbuState.new_game(first_declarer=_huge()),
        lambda: __import__("barbu_env.game.engine", fromlist=["x"]).BarbuState.new_game(episode="x" * 100_000),
        lambda: __import__("barbu_env.game.actions", fromlist=["x"]).action_text(_huge()),
        lambda: __import__("barbu_env.game.actions", fromlist=["x"]).parse_action("x" * 100_000),
        lambda: __import__("barbu_env.agents", fromlist=["x"]).make_agent("pimc", rollout=_huge()),
    ],
)
def test_a_huge_value_in_a_constructor_or_call_is_refused_in_a_short_line(call):
    """What a caller passed is quoted in a few dozen characters, however large it is."""
    with pytest.raises((ValueError, TypeError)) as refused:
        call()
    message = str(refused.value)
    assert "\n" not in message and len(message) < 400, message[:200]
