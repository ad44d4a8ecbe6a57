"""``Barbu-v1``'s vector entry point (``barbu_env.envs.vector_gym.BarbuGymVectorEnv``): N games
of one learner against agents on the batched engine, each sub-environment playing, move by
move, the games a ``Barbu-v1`` seeded alike plays (``SyncVectorEnv``'s); same-step
autoreset to the next game's first decision; rewards, masks, illegal actions and seeding
as ``Barbu-v1``'s; Gymnasium's vector conventions."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import DictInfoToList, DtypeObservation, NormalizeObservation, RecordEpisodeStatistics

import barbu_env
from barbu_env.envs.vector_gym import BarbuGymVectorEnv
from barbu_env.game.engine import IllegalActionError
from benchmarks import bench_vector_env

gymnasium.register_envs(barbu_env)


def random_actions(rng: np.random.Generator, masks: np.ndarray, illegal: float = 0.0) -> np.ndarray:
    """A random legal action per row; with probability ``illegal`` an action off the mask instead."""
    actions = np.where(masks > 0, rng.random(masks.shape), -1.0).argmax(axis=1)
    off = rng.random(len(masks)) < illegal
    actions[off] = np.where(masks[off] > 0, -1.0, rng.random(masks[off].shape)).argmax(axis=1)
    return actions


def play_beside_barbu_v1(num_envs: int, seed: int, steps: int, illegal: float = 0.0, **kwargs) -> int:
    """Step ``BarbuGymVectorEnv`` and ``num_envs`` ``Barbu-v1``s seeded ``seed + i`` with the
    same actions, comparing every decision; returns the episodes that ended."""
    vec = BarbuGymVectorEnv(num_envs, hand_results=True, **kwargs)
    singles = [gymnasium.make("Barbu-v1", **kwargs) for _ in range(num_envs)]
    obs, info = vec.reset(seed=seed)
    expected = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    rng = np.random.default_rng(seed)
    ended = 0
    for t in range(steps):
        for i, (o, inf) in enumerate(expected):
            assert np.array_equal(obs[i], o), f"step {t}, sub-environment {i}: observation"
            assert np.array_equal(info["action_mask"][i], inf["action_mask"]), f"step {t}, {i}: mask"
            assert info["seat"][i] == inf["seat"]
            assert info["action_mask"][i].any()
        actions = random_actions(rng, info["action_mask"], illegal)
        obs, rewards, terminated, truncated, info = vec.step(actions)
        assert not truncated.any()
        expected = []
        for i, env in enumerate(singles):
            o, r, term, _, inf = env.step(int(actions[i]))
            assert rewards[i] == r, f"step {t}, sub-environment {i}: reward"
            assert terminated[i] == term
            assert bool(info.get("_illegal_action", np.zeros(num_envs))[i]) == inf.get("illegal_action", False)
            assert bool(info.get("_hand_results", np.zeros(num_envs))[i]) == ("hand_results" in inf)
            if "hand_results" in inf:
                assert info["hand_results"][i] == inf["hand_results"]
            if term:
                ended += 1
                assert info["_scores"][i] and info["scores"][i].tolist() == inf["scores"]
                o, inf = env.reset()
            expected.append((o, inf))
    return ended


@pytest.mark.parametrize(
    "kwargs",
    [
        {"opponents": "random"},
        {"opponents": "heuristic", "seat": "rotate", "skip_forced": True},
        {"opponents": ["random", "heuristic", "random"], "seat": 2},
        {"opponents": "heuristic", "seat": "rotate", "skip_forced": False, "reward_scale": 0.5},
        {"opponents": "random", "seat": 3, "skip_forced": True},
    ],
    ids=["random", "heuristic-rotate-skip", "mixed-seat2", "heuristic-rotate-scaled", "random-seat3-skip"],
)
def test_each_sub_environment_plays_barbu_v1s_games_move_by_move(kwargs):
    ended = play_beside_barbu_v1(3, seed=11, steps=90, illegal=0.05, episode="hand", **kwargs)
    assert ended >= 3 * 3  # several games each, autoresets included (one sub-environment: the next test)


def test_whole_games_match_barbu_v1_too():
    assert play_beside_barbu_v1(1, seed=2, steps=200, opponents="heuristic", episode="round", skip_forced=True) >= 1


def test_it_plays_sync_vector_envs_games_through_make_vec():
    kwargs = {"opponents": "random", "seat": "rotate", "episode": "hand"}
    vec = gymnasium.make_vec("Barbu-v1", num_envs=3, vectorization_mode="vector_entry_point", **kwargs)
    same_step = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}  # (sync's default is NEXT_STEP)
    sync = gymnasium.make_vec("Barbu-v1", 3, vectorization_mode="sync", vector_kwargs=same_step, **kwargs)
    assert isinstance(vec.unwrapped, BarbuGymVectorEnv)
    (obs, info), (obs2, info2) = vec.reset(seed=5), sync.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(60):
        assert np.array_equal(obs, obs2) and np.array_equal(info["action_mask"], info2["action_mask"])
        assert np.array_equal(info["seat"], info2["seat"])
        actions = random_actions(rng, info["action_mask"])
        obs, rewards, terminated, _, info = vec.step(actions)
        obs2, rewards2, terminated2, _, info2 = sync.step(actions)
        assert np.array_equal(rewards, rewards2) and np.array_equal(terminated, terminated2)


def test_autoreset_gives_the_new_games_first_decision_and_the_ended_games_reward():
    envs = BarbuGymVectorEnv(4, opponents="random", seat="rotate", episode="hand", skip_forced=True)
    obs, info = envs.reset(seed=3)
    rng = np.random.default_rng(3)
    seats, returns, ends = info["seat"].copy(), np.zeros(4), 0
    for _ in range(200):
        obs, rewards, terminated, _, info = envs.step(random_actions(rng, info["action_mask"]))
        assert info["action_mask"].any(axis=1).all(), "an all-zero mask"
        assert np.array_equal(info["action_mask"].astype(bool), envs.action_masks())
        returns += rewards
        for i in np.flatnonzero(terminated):
            ends += 1
            assert info["_scores"][i]
            assert returns[i] == info["scores"][i][seats[i]]  # the episode's rewards: the learner's score
            assert info["seat"][i] == (seats[i] + 1) % 4  # the next game's seat (rotate)
            assert obs[i][:52].sum() == 13  # the new hand's 13 cards, not a finished game
            returns[i] = 0
        assert np.array_equal(info["_scores"] if "_scores" in info else np.zeros(4, bool), terminated)
        seats = info["seat"].copy()
    assert ends >= 8


def test_masks_are_int8_in_info_and_bool_from_action_masks():
    envs = BarbuGymVectorEnv(3, opponents="heuristic", episode="hand")
    _, info = envs.reset(seed=1)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (3, 85)
    masks = envs.action_masks()
    assert masks.dtype == np.bool_ and np.array_equal(masks, info["action_mask"] > 0)
    assert info["_action_mask"].all() and info["_seat"].all()


def test_illegal_action_random_plays_a_legal_one_and_says_so():
    envs = BarbuGymVectorEnv(2, opponents="random", episode="hand")
    _, info = envs.reset(seed=4)
    actions = random_actions(np.random.default_rng(0), info["action_mask"])
    actions[1] = int(np.flatnonzero(info["action_mask"][1] == 0)[0])  # in Discrete(85), off the mask
    _, _, _, _, info = envs.step(actions)
    assert info["_illegal_action"].tolist() == [False, True] and info["illegal_action"].tolist() == [False, True]


def test_actions_outside_the_space_and_unknown_reset_options_are_refused():
    envs = BarbuGymVectorEnv(2, opponents="random", episode="hand")
    _, info = envs.reset(seed=4)
    actions = random_actions(np.random.default_rng(0), info["action_mask"])
    for bad in (-1, 85, 2**40):
        wrong = actions.copy()
        wrong[1] = bad
        with pytest.raises(ValueError, match="sub-environment 1.*not in Discrete"):
            envs.step(wrong)
    envs.step(actions.astype(np.float64))  # whole numbers as floats are actions too
    with pytest.raises(ValueError, match="first_declare"):
        envs.reset(options={"first_declare": 2})


def test_illegal_action_raise_names_it_and_moves_no_game():
    envs = BarbuGymVectorEnv(2, opponents="random", episode="hand", illegal_action="raise")
    twin = BarbuGymVectorEnv(2, opponents="random", episode="hand", illegal_action="raise")
    obs, info = envs.reset(seed=6)
    twin.reset(seed=6)
    legal = random_actions(np.random.default_rng(0), info["action_mask"])
    bad = legal.copy()
    bad[1] = int(np.flatnonzero(info["action_mask"][1] == 0)[0])
    with pytest.raises(IllegalActionError, match="sub-environment 1"):
        envs.step(bad)
    assert np.array_equal(envs.step(legal)[0], twin.step(legal)[0])


def test_seeding_replays_continues_and_takes_one_seed_per_sub_environment():
    def first_observations(envs, seeds):
        return [envs.reset(seed=s)[0] for s in seeds]

    envs = BarbuGymVectorEnv(2, opponents="random", episode="hand")
    a = first_observations(envs, [7, None, None])
    b = first_observations(envs, [7, None, None])
    assert all(np.array_equal(x, y) for x, y in zip(a, b))  # a seeded reset replays
    assert not np.array_equal(a[0], a[1])  # reset() draws the next game
    listed = envs.reset(seed=[7, 8])[0]
    assert np.array_equal(listed, a[0])  # an int seeds sub-environment i with seed + i


def test_reset_mask_resets_only_those_sub_environments():
    envs = BarbuGymVectorEnv(3, opponents="heuristic", episode="hand")
    obs, info = envs.reset(seed=0)
    obs, *_ = envs.step(random_actions(np.random.default_rng(0), info["action_mask"]))
    again, _ = envs.reset(seed=0, options={"reset_mask": np.array([True, False, False])})
    first, _ = BarbuGymVectorEnv(3, opponents="heuristic", episode="hand").reset(seed=0)
    assert np.array_equal(again[0], first[0]) and np.array_equal(again[1:], obs[1:])


def test_reset_options_of_barbu_v1_apply_to_every_sub_environment():
    envs = BarbuGymVectorEnv(2, opponents="random", episode="hand")
    _, info = envs.reset(seed=0, options={"seat": 3, "first_declarer": 3})
    assert info["seat"].tolist() == [3, 3]
    assert (info["action_mask"][:, 52:59].sum(axis=1) == 7).all()  # the learner declares first


def test_gymnasiums_vector_wrappers_take_it():
    envs = RecordEpisodeStatistics(BarbuGymVectorEnv(3, opponents="random", episode="hand"))
    listed = DictInfoToList(BarbuGymVectorEnv(3, opponents="random", episode="hand"))
    obs, info = envs.reset(seed=2)
    _, infos = listed.reset(seed=2)
    assert envs.observation_space.contains(obs) and len(infos) == 3 and "action_mask" in infos[0]
    rng = np.random.default_rng(2)
    episodes = 0
    for _ in range(120):
        actions = random_actions(rng, info["action_mask"])
        obs, rewards, terminated, _, info = envs.step(actions)
        _, _, _, _, infos = listed.step(actions)
        assert envs.observation_space.contains(obs)
        for i in np.flatnonzero(terminated):
            episodes += 1
            assert info["_episode"][i] and info["episode"]["r"][i] == info["scores"][i][0]  # the learner's score
            assert infos[i]["scores"].tolist() == info["scores"][i].tolist()
    assert episodes > 3


@pytest.mark.parametrize("opponents", ["random", "heuristic"])
def test_next_step_autoreset_plays_sync_vector_envs_games_step_for_step(opponents):
    kwargs = {"opponents": opponents, "episode": "hand", "seat": "rotate", "skip_forced": True}
    ours = gymnasium.make_vec("Barbu-v1", num_envs=3, autoreset_mode=AutoresetMode.NEXT_STEP, **kwargs)
    sync = gymnasium.make_vec(
        "Barbu-v1", 3, vectorization_mode="sync", vector_kwargs={"autoreset_mode": AutoresetMode.NEXT_STEP}, **kwargs
    )
    assert ours.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    (obs, info), (expected, expected_info) = ours.reset(seed=5), sync.reset(seed=5)
    rng, ended = np.random.default_rng(5), 0
    for t in range(150):
        assert np.array_equal(obs, expected) and np.array_equal(info["action_mask"], expected_info["action_mask"]), t
        actions = random_actions(rng, info["action_mask"])  # (ignored where the last step ended the episode)
        obs, rewards, terminated, _, info = ours.step(actions)
        expected, expected_rewards, expected_terminated, _, expected_info = sync.step(actions)
        assert np.array_equal(rewards, expected_rewards) and np.array_equal(terminated, expected_terminated), t
        ended += int(terminated.sum())
        assert not info["action_mask"][terminated].any()  # the finished game's last view: nothing to decide
    assert ended >= 6


def test_next_step_ignores_whatever_action_a_finished_game_is_given():
    envs = BarbuGymVectorEnv(3, opponents="random", episode="hand", autoreset_mode="NextStep", illegal_action="raise")
    _, info = envs.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(200):
        actions = random_actions(rng, info["action_mask"])
        actions[~info["action_mask"].any(axis=1)] = -1  # a finished game: no action at all
        _, rewards, terminated, _, info = envs.step(actions)
    assert info["action_mask"].any(axis=1).any()


def test_gymnasiums_observation_wrappers_take_the_next_step_mode():
    envs = BarbuGymVectorEnv(4, opponents="random", episode="hand", autoreset_mode="NextStep")
    wrapped = DtypeObservation(NormalizeObservation(envs), np.float64)
    obs, info = wrapped.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(40):
        obs, _, _, _, info = wrapped.step(random_actions(rng, info["action_mask"]))
    assert obs.dtype == np.float64 and obs.shape == (4, 1132)


def test_the_benchmark_measures_every_subject():
    results = bench_vector_env.run(["random"], envs=4, async_envs=0, seconds=0.05, episode="hand")
    assert [m.subject for m in results] == [bench_vector_env.VECTOR_ENTRY_POINT, bench_vector_env.SYNC]
    assert all(m.rate > 0 for m in results)
    assert "vs SyncVectorEnv" in bench_vector_env.format_table(results)
