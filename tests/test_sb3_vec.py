"""``barbu_env.envs.sb3_vec``: SB3's VecEnv over the batched engine plays DummyVecEnv's games."""

import gymnasium
import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

import barbu_env  # noqa: E402, F401  (registers Barbu-v1)
from barbu_env.envs import make_sb3_vec  # noqa: E402
from benchmarks import bench_sb3  # noqa: E402

KWARGS = {"opponents": ("random", "heuristic", "random"), "seat": "rotate", "skip_forced": True, "reward_scale": 0.01}


def same_infos(a: dict, b: dict) -> bool:
    """Equal info dicts, but for the ``Monitor``'s episode time."""
    same = a.keys() == b.keys()
    for key in a.keys() & b.keys():
        if key == "episode":
            same &= (a[key]["r"], a[key]["l"]) == pytest.approx((b[key]["r"], b[key]["l"]))
        else:
            same &= np.array_equal(a[key], b[key]) if key != "hand_results" else a[key] == b[key]
    return same


@pytest.mark.parametrize(
    "episode, n, games",
    [("hand", 3, 3), pytest.param("game", 2, 2, marks=pytest.mark.slow)],
)
def test_it_plays_the_games_of_dummy_vec_env_of_barbu_v1_seeded_alike(episode, n, games):
    dummy = make_vec_env(lambda: gymnasium.make("Barbu-v1", episode=episode, **KWARGS), n_envs=n, seed=7)
    ours = make_sb3_vec(n, seed=7, episode=episode, hand_results=True, **KWARGS)
    assert np.array_equal(dummy.reset(), ours.reset())
    rng = np.random.default_rng(0)
    ended = np.zeros(n, dtype=int)
    while ended.min() < games:
        masks = get_action_masks(dummy)
        assert np.array_equal(masks, get_action_masks(ours))
        actions = np.where(masks, rng.random(masks.shape), -1).argmax(axis=1)
        (obs, rewards, dones, infos), (obs2, rewards2, dones2, infos2) = dummy.step(actions), ours.step(actions)
        assert np.array_equal(obs, obs2) and np.array_equal(rewards, rewards2) and np.array_equal(dones, dones2)
        assert all(map(same_infos, infos, infos2))
        assert all(map(same_infos, dummy.reset_infos, ours.unwrapped.reset_infos))
        ended += dones


def test_seed_is_used_by_the_next_reset_only():
    env = make_sb3_vec(2, seed=3, opponents="random")
    first = env.reset()
    assert not np.array_equal(env.reset(), first)  # the next games
    env.seed(3)
    assert np.array_equal(env.reset(), first)


def test_action_masks_are_the_bool_rows_maskable_ppo_reads():
    env = make_sb3_vec(4, seed=0, opponents="random")
    env.reset()
    masks = env.action_masks()
    assert masks.shape == (4, 85) and masks.dtype == bool and masks.any(axis=1).all()
    assert is_masking_supported(env) and np.array_equal(get_action_masks(env), masks)
    assert np.array_equal(np.stack(env.env_method("action_masks", indices=[3, 1])), masks[[3, 1]])
    obs, _, _, infos = env.step(masks.argmax(axis=1))  # the first legal action of each
    assert np.array_equal(env.action_masks(), np.stack([info["action_mask"] for info in infos]).astype(bool))


@pytest.fixture
def one_torch_thread():
    """Torch on one thread (two spin against each other on a busy machine), restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow  # a fresh process spends ~10 s importing torch._dynamo for Adam
def test_maskable_ppo_learns_on_it_unchanged(one_torch_thread):
    env = make_sb3_vec(8, seed=0, opponents="random", episode="hand", illegal_action="raise")
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps == 512 and len(model.ep_info_buffer) > 0  # episodes seen through VecMonitor


@pytest.mark.slow  # trains and evaluates four tiny models
def test_the_benchmark_quick_mode_runs(one_torch_thread, capsys):
    assert bench_sb3.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("| 4 | DummyVecEnv |") == 1 and out.count("**") == 4  # parts 1 and 2 at N = 4: their ratios
    assert "parameters: 0\n" in out  # part 3: the same games, the same learning
