"""The batched engine's API (barbu_env/game/vector.py): automatic reset and its infos, seeding,
deals, errors, the Gymnasium view. Its games are compared with the oracle's, decision by
decision, under every preset and switch, in tests/test_oracle.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from differential import random_deals
from oracle.engine import BarbuState as OracleState
from oracle.observation import ObservationEncoder as OracleEncoder

import barbu_env
from barbu_env.game.actions import mask_array
from barbu_env.game.cards import cards_of
from barbu_env.game.engine import NUM_ACTIONS, IllegalActionError
from barbu_env.game.observation import OBS_DIM, OFFSETS
from barbu_env.game.vector import VectorBarbu


def random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of ``masks``."""
    return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)


# ---------------------------------------------------------------------- the vector API


def run_until_done(vec: VectorBarbu, rng: np.random.Generator, masks: np.ndarray, slot: int):
    """Step random legal actions until game ``slot`` ends; returns that step's outputs."""
    while True:
        out = vec.step(random_legal(rng, masks))
        masks = out[1]
        if out[4][slot]:
            return out


def test_shapes_and_dtypes():
    vec = VectorBarbu(3, seed=0)
    obs, masks, seat = vec.reset()
    assert obs.shape == (3, OBS_DIM) and obs.dtype == np.float32
    assert masks.shape == (3, NUM_ACTIONS) and masks.dtype == bool
    assert seat.shape == (3,) and set(seat) <= {0, 1, 2, 3}
    # Each game starts with its declarer choosing among the seven contracts.
    assert masks[:, 52:59].all() and masks.sum(axis=1).tolist() == [7, 7, 7]
    obs, masks, seat, rewards, dones, infos = vec.step(np.full(3, 52))
    assert rewards.shape == (3, 4) and rewards.dtype == np.float32
    assert dones.shape == (3,) and dones.dtype == bool
    assert set(infos) == {"hand_over", "final_scores", "game_length"}
    assert not dones.any() and not infos["hand_over"].any() and not rewards.any()
    assert vec.other_hands().shape == (3, 156)


def test_auto_reset_starts_a_new_game_and_keeps_the_final_scores():
    rng = np.random.default_rng(0)
    vec = VectorBarbu(2, seed=5)
    _, masks, _ = vec.reset()
    totals = np.zeros((2, 4))
    while True:
        obs, masks, _seat, rewards, dones, infos = vec.step(random_legal(rng, masks))
        totals += rewards
        if dones[0]:
            break
    # The final scores are the sum of the rewards; rewards sum to 0 over a game (default points).
    assert infos["final_scores"][0].tolist() == totals[0].tolist()
    assert totals[0].sum() == 0
    assert infos["hand_over"][0]
    assert infos["game_length"][0] > 28 * 50
    # The slot already holds the new game's first decision: a declaration in hand 0.
    assert vec.hand_numbers()[0] == 0 and vec.scores()[0].tolist() == [0, 0, 0, 0]
    assert masks[0, 52:59].all() and masks[0].sum() == 7
    dec = obs[0].reshape(-1)
    assert dec[OFFSETS["phase"][0]] == 1.0  # phase: declare
    assert dec[OFFSETS["hand_number"][0]] == 1.0  # hand number 0
    # a fresh hand: nothing played, nobody has shown anything
    assert dec[52 : OFFSETS["phase"][0]].sum() == 0 and dec[:52].sum() == 13


def test_the_game_after_an_auto_reset_plays_as_the_oracle():
    # The new game's first hand is read from the slot (its deal, its declarer) and
    # replayed through the oracle with the same actions.
    rng = np.random.default_rng(1)
    vec = VectorBarbu(1, seed=9)
    _, masks, _ = vec.reset()
    obs, masks, seat, *_ = run_until_done(vec, rng, masks, 0)
    deal = [cards_of(int(h)) for h in vec._cards[0, :4]]
    game = OracleState.new_game(rng=np.random.default_rng(0), first_declarer=int(seat[0]), deals=[deal])
    encoder = OracleEncoder()
    result = None
    while result is None:
        assert np.array_equal(encoder.observe(game, game.current_player), obs[0])
        assert np.array_equal(mask_array(game.legal_mask()).astype(bool), masks[0])
        action = random_legal(rng, masks)
        result = game.apply_action(int(action[0]))
        obs, masks, seat, rewards, _dones, _ = vec.step(action)
    assert vec.hand_numbers()[0] == 1
    assert rewards[0].tolist() == list(result.settled)


def test_reset_with_a_seed_replays_and_without_continues():
    vec = VectorBarbu(2, seed=11)
    a = vec.reset()[0]
    b = vec.reset()[0]  # continues the streams: new deals
    c = vec.reset(seed=11)[0]  # replays
    assert np.array_equal(a, c)
    assert not np.array_equal(a, b)


def test_deals_as_text_and_first_declarers():
    # Seat 0 holds the clubs, 1 the diamonds, 2 the hearts, 3 the spades.
    deal = [[barbu_env.card_text(c) for c in range(s * 13, s * 13 + 13)] for s in range(4)]
    vec = VectorBarbu(3, seed=0)
    obs, _masks, seat = vec.reset(deals=[[deal], None, [deal, deal]], first_declarers=[2, None, 1])
    assert seat[0] == 2 and seat[2] == 1
    # Game 0: the declarer (seat 2) holds the hearts.
    assert np.flatnonzero(obs[0, :52]).tolist() == list(range(26, 39))
    assert np.flatnonzero(obs[2, :52]).tolist() == list(range(13, 26))


def test_illegal_action_raises_and_changes_nothing():
    vec = VectorBarbu(2, seed=0, copy=True)
    _obs, _masks, _seat = vec.reset()
    before = (vec._ints.copy(), vec._cards.copy(), vec._games.hblock.copy())
    with pytest.raises(IllegalActionError, match="game 1"):
        vec.step(np.array([52, 0]))  # game 0 may declare No Tricks; game 1 may not play a card
    assert all(np.array_equal(x, y) for x, y in zip(before, (vec._ints, vec._cards, vec._games.hblock)))
    with pytest.raises(IllegalActionError):
        vec.step(np.array([85, 52]))
    with pytest.raises(ValueError):
        vec.step(np.array([52]))  # one action per game
    vec.step(np.array([52, 52]))


def test_copy_false_returns_the_buffers():
    vec = VectorBarbu(2, seed=0, copy=False)
    obs, masks, _ = vec.reset()
    obs2, masks2, *_ = vec.step(np.array([52, 52]))
    assert obs2 is obs and masks2 is masks


def test_other_hands_are_the_privileged_rows():
    rng = np.random.default_rng(2)
    deals = random_deals(rng, 1)
    vec = VectorBarbu(1, seed=0)
    _, masks, _seat = vec.reset(deals=deals, first_declarers=[0])
    game = OracleState.new_game(rng=np.random.default_rng(0), first_declarer=0, deals=deals[0].tolist())
    enc = OracleEncoder()
    for _ in range(300):
        obs = enc.observe(game, game.current_player)
        assert np.array_equal(enc.privileged(obs, game.current_player)[OBS_DIM:], vec.other_hands()[0])
        hands = [game.hands[(game.current_player + k) % 4] for k in (1, 2, 3)]
        rows = vec.other_hands()[0].reshape(3, 52)
        assert [sum(1 << int(c) for c in np.flatnonzero(r)) for r in rows] == hands
        a = random_legal(rng, masks)
        game.apply_action(int(a[0]))
        _, masks, _seat, *_ = vec.step(a)


# ---------------------------------------------------------------------- the Gymnasium view


def test_gymnasium_vector_env_wraps_the_batched_engine():
    import gymnasium

    from barbu_env.envs.vector_gym import BarbuVectorEnv

    envs = BarbuVectorEnv(3, rules="declarer_only", seed=4)
    assert isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, info = envs.reset(seed=4)
    assert obs in envs.observation_space and obs.shape == (3, OBS_DIM)
    assert info["action_mask"].shape == (3, NUM_ACTIONS)
    reference = VectorBarbu(3, rules="declarer_only", seed=4)
    ref_obs, _ref_masks, ref_seat = reference.reset(seed=4)
    assert np.array_equal(obs, ref_obs) and np.array_equal(info["seat"], ref_seat)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        actions = random_legal(rng, envs.action_masks())
        acted = info["seat"]
        obs, reward, terminated, truncated, info = envs.step(actions)
        ref = reference.step(actions)
        assert np.array_equal(obs, ref[0]) and np.array_equal(info["rewards"], ref[3])
        assert reward.tolist() == info["rewards"][np.arange(3), acted].tolist()
        assert not truncated.any() and np.array_equal(terminated, info["_final_scores"])
        assert obs in envs.observation_space
        if terminated.any():
            i = int(np.flatnonzero(terminated)[0])
            assert info["final_scores"][i].sum() == 0  # standard points: a game sums to 0
            break
    else:
        raise AssertionError("no game ended in 3000 steps")


#: A kernel module that freezes a constant of another module (``consts.X``) into its
#: compiled code, as barbu's kernel modules freeze the observation layout.
FROZEN_X_KERNELS = (
    "from barbu_env.game._bits import kernel, refresh_stale_cache\n"
    "from .consts import X\n"
    "FROZEN = (X,)\n"
    "@kernel\n"
    "def probe():\n"
    "    return FROZEN\n"
    "@kernel\n"
    "def times_ten():\n"
    "    return 10 * X\n"
)
#: What a kernel module does on import: drop its cache if the cached constants are stale.
REFRESH = "refresh_stale_cache(globals(), probe, FROZEN)\n"


def kernel_package(root: Path, name: str, files: dict[str, str]) -> dict[str, str]:
    """A package ``name`` under ``root`` holding ``files`` (name -> text); returns the
    environment in which a child process imports it."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file, text in files.items():
        (package / file).write_text(text)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}


@pytest.mark.slow  # five interpreters; a stale cache comes from editing the layout in a clone
def test_a_stale_compilation_is_compiled_afresh_on_import(tmp_path):
    # numba's disk cache notices changes to a kernel module's own file, not to the constants it
    # reads from another module: a package whose constant changes under an unchanged kernel
    # file gets the old value from the cache, unless the module refreshes a stale cache on
    # import as every kernel module does (barbu_env.game._bits.refresh_stale_cache).
    env = kernel_package(tmp_path, "stalepkg", {"fresh.py": FROZEN_X_KERNELS + REFRESH, "stale.py": FROZEN_X_KERNELS})

    def run(module: str) -> int:
        code = f"from stalepkg.{module} import probe, times_ten; probe(); print(times_ten())"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return int(out.stdout)

    consts = tmp_path / "stalepkg" / "consts.py"
    consts.write_text("X = 1\n")
    assert run("fresh") == run("stale") == 10  # compiled and cached
    consts.write_text("X = 2  # changed\n")
    assert run("stale") == 10  # the stale cache, as numba alone gives it
    assert run("fresh") == 20  # compiled afresh
    assert run("fresh") == 20  # and cached afresh


def _no_file_writes() -> None:  # as on a full disk: every write of a byte fails (EFBIG)
    import resource  # POSIX only

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


@pytest.mark.slow  # an interpreter compiling every kernel
@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")
def test_kernels_compile_and_run_when_their_disk_cache_cannot_be_written(tmp_path):
    env = kernel_package(tmp_path, "fullpkg", {"consts.py": "X = 1\n", "k.py": FROZEN_X_KERNELS + REFRESH})
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    code = "from fullpkg.k import times_ten; print(times_ten())"

    def run(full: bool) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=_no_file_writes if full else None,
        )

    first = run(full=True)  # nothing cached, nothing can be: compiled in memory, one warning
    assert first.returncode == 0 and first.stdout == "10\n", first.stderr[-2000:]
    assert first.stderr.count("CacheWarning") == 1 and "compiled in memory" in first.stderr
    assert run(full=False).stdout == "10\n"  # cached on a disk with room
    (tmp_path / "fullpkg" / "consts.py").write_text("X = 2  # changed\n")
    stale = run(full=True)  # the stale cache cannot be dropped: it is not read either
    assert stale.returncode == 0 and stale.stdout == "20\n", stale.stderr[-2000:]
