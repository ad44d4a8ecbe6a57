"""What a stranger hands over cannot grow without bound, hang, or end in a traceback: an SB3
zip bomb is refused small, a record over its limit or nested too deeply is refused unread,
and the environments take numpy integers as actions."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------- SB3 zips

MB = 1 << 20


def write_zeros(z: zipfile.ZipFile, name: str, size: int) -> None:
    """A member of ``size`` zero bytes (a multiple of 16 MB), compressed as ``z`` compresses
    (deflated at level 1: about 1,000 to 1, fast), written in 16 MB chunks."""
    with z.open(name, "w") as f:
        chunk = bytes(16 * MB)
        for _ in range(size // len(chunk)):
            f.write(chunk)


def zip_bomb(path: Path, data_size: int, lie: int | None = None) -> Path:
    """An SB3-looking zip (``data`` and ``policy.pth``) whose ``data`` is ``data_size`` zero
    bytes; with ``lie``, its headers say ``data`` is ``lie`` bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
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


def test_an_sb3_zip_bomb_is_refused_unread_in_little_memory(tmp_path):
    # 256 MB of zeros in a zip of a quarter MB
    bomb = zip_bomb(tmp_path / "bomb.zip", 256 * MB)
    assert bomb.stat().st_size < 2 * MB
    _, grown, said = refusal(bomb)
    assert "its member 'data' is over 8,000,000 bytes decompressed" in said and "refused unread" in said
    assert grown < 32, grown  # MB: the member is refused unread


@pytest.mark.slow  # an interpreter with a memory cap
def test_a_zip_whose_header_lies_about_a_member_is_read_only_up_to_the_cap(tmp_path):
    liar = zip_bomb(tmp_path / "liar.zip", 64 * MB, lie=1000)
    _, grown, said = refusal(liar)
    assert "bomb" not in said and ("not a readable zip" in said or "over 8,000,000" in said), said
    assert grown < 32, grown  # MB: the member is refused unread


@pytest.fixture(scope="module")
def sb3_zip(tmp_path_factory) -> Path:
    pytest.importorskip("sb3_contrib")
    from tiny_runs import tiny_maskable_ppo

    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    tiny_maskable_ppo().save(path)
    return path


@pytest.mark.slow  # SB3 imported
def test_a_trusted_sb3_model_with_a_bomb_for_weights_is_refused_before_sb3_reads_it(sb3_zip, tmp_path):
    bomb = tmp_path / "weights_bomb.zip"
    with zipfile.ZipFile(sb3_zip) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name in src.namelist():
            if name != "policy.pth":
                z.writestr(name, src.read(name))
        write_zeros(z, "policy.pth", 272 * MB)  # over the 256 MB cap
    _, grown, said = refusal(bomb, trust=True, prepare="import sb3_contrib")
    assert "its member 'policy.pth' is over 256,000,000 bytes decompressed" in said, said
    assert grown < 32, grown  # MB: the member is refused unread


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


# ---------------------------------------------------------------------- records


def test_a_record_over_its_limit_is_refused_unread(tmp_path):
    from barbu_env.evaluation.records import READ_LIMIT, GameRecord
    from barbu_env.util.files import InputError

    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(READ_LIMIT + 1)  # sparse: nothing written, nothing to read
    with pytest.raises(InputError, match="over the limit of 2,000,000: refused unread"):
        GameRecord.load(big)


# ---------------------------------------------------------------------- environments


def legal_action(env) -> int:
    return int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])


@pytest.mark.parametrize("kind", ["0-d array", "numpy int"])
def test_every_env_takes_numpy_ints_and_0_d_arrays(kind):
    import gymnasium

    make = np.array if kind == "0-d array" else np.int64
    from barbu_env.envs.aec import env as make_env

    env = make_env()
    env.reset(seed=0)
    action = legal_action(env)
    env.step(make(action))
    assert env.unwrapped.game.history[-1] == action
    gym = gymnasium.make("Barbu-v1", opponents="random")
    gym.reset(seed=0)
    action = int(np.flatnonzero(gym.unwrapped.action_masks())[0])
    assert "illegal_action" not in gym.step(make(action))[4]


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
