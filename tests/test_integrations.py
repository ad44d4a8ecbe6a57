"""Other RL libraries: the Gymnasium env ``Barbu-v1`` (SB3), RLlib's multi-agent adapter,
TorchRL's wrapper, Tianshou's ``PettingZooEnv`` and ``Collector``, SuperSuit's wrappers,
and the trained policies as ``barbu eval`` agents.

The environment tests are fast and run in the default suite (the RLlib, TorchRL, Tianshou
and SuperSuit ones are skipped without those libraries). The short training runs are ``slow``:
``pytest -m "slow or not slow" tests/test_integrations.py`` with the extras installed
(``.ci/run`` does so in its integration step, with ``BARBU_REQUIRE_INTEGRATIONS=1``: a
missing extra fails there instead of skipping; see ``tests/integration_extras.py``)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from integration_extras import require

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.cli.main import main as barbu
from barbu_env.envs.gym_env import BarbuGymEnv
from barbu_env.game.actions import AGENTS, mask_array
from barbu_env.game.cards import cards_of
from barbu_env.game.engine import IllegalActionError
from barbu_env.game.observation import OBS_DIM


def play(env, seed=0, rng_seed=0, options=None):
    """Play a whole game with random legal actions; returns the per-step tuples."""
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed, options=options)
    steps = [(obs, 0.0, False, info)]
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, reward, done, truncated, info = env.step(action)
        assert not truncated
        steps.append((obs, reward, done, info))
    return steps


# ---------------------------------------------------------------------- the Gymnasium env


def test_sb3_env_checker_passes():
    from stable_baselines3.common.env_checker import check_env

    check_env(BarbuGymEnv(opponents="heuristic", seat="rotate"))


@pytest.mark.parametrize("seat", [0, 3])
def test_rewards_are_the_learners_own_settled_scores(seat):
    env = BarbuGymEnv(opponents="random", seat=seat, reward_scale=0.5)
    steps = play(env, seed=seat)
    settled = [r["settled"][seat] for *_, info in steps for r in info.get("hand_results", [])]
    assert len(settled) == 28
    rewards = [reward for _, reward, _, _ in steps]
    assert sum(rewards) == pytest.approx(0.5 * sum(settled))
    final = steps[-1][3]["scores"]
    assert sum(settled) == final[seat] == env.game.scores[seat] and sum(final) == 0
    # Each step's reward is exactly the settled scores of the hands that ended during it.
    for _, reward, _, info in steps[1:]:
        assert reward == pytest.approx(0.5 * sum(r["settled"][seat] for r in info.get("hand_results", [])))
    assert any(
        info.get("hand_results") and reward == 0.5 * info["hand_results"][0]["settled"][seat]
        for _, reward, _, info in steps
        if reward
    )


def test_observations_and_masks_are_the_aec_envs_for_the_learners_seat():
    env = BarbuGymEnv(opponents="heuristic", seat=1)
    rng = np.random.default_rng(3)
    obs, info = env.reset(seed=3)
    decisions = 0
    while True:
        game = env.game
        assert game.current_player == 1
        mask = mask_array(game.legal_mask())
        np.testing.assert_array_equal(env.action_masks(), mask.astype(bool))
        np.testing.assert_array_equal(info["action_mask"], mask)
        np.testing.assert_array_equal(obs, game.observe(1))
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        decisions += 1
        if done:
            break
    assert not env.action_masks().any() and decisions > 300


def test_the_same_game_as_the_aec_env_plays_with_the_same_actions():
    # Replaying the Gym game's actions through barbu_env.env() on its deals gives the
    # learner the same observations and masks at its decisions.
    env = BarbuGymEnv(opponents="random", seat=2)
    steps = play(env, seed=5)
    game = env.game
    aec = barbu_env.env()
    deals = [[cards_of(hand) for hand in r.dealt] for r in game.results]
    aec.reset(options={"first_declarer": game.first_declarer, "deals": deals})
    learner_obs = [o for o, *_ in steps[:-1]]
    seen = []
    for action in game.history:
        if aec.agent_selection == "player_2":
            seen.append(aec.observe("player_2"))
        aec.step(action)
    assert len(seen) == len(learner_obs)
    for a, b in zip(seen, learner_obs):
        np.testing.assert_array_equal(a["observation"], b)
    assert aec.unwrapped.game.scores == game.scores


def test_gym_rewards_are_the_shared_crediting_rule_over_the_aec_game():
    # The Gym env's reward of each learner decision is what barbu_env.game.credit assigns that
    # decision over the same game's steps in barbu_env.env() (every seat's rewards).
    from barbu_env.game.credit import NO_DECISION, credit_steps

    env = BarbuGymEnv(opponents="random", seat=1)
    steps = play(env, seed=8)
    game = env.game
    aec = barbu_env.env()
    aec.reset(
        options={"first_declarer": game.first_declarer, "deals": [[cards_of(h) for h in r.dealt] for r in game.results]}
    )
    deciders, rewards, over = [], [], []
    for action in game.history:
        deciders.append(1 if aec.agent_selection == "player_1" else NO_DECISION)
        aec.step(action)
        rewards.append([aec.rewards[a] for a in AGENTS])
        over.append(all(aec.terminations.values()))
    credit = credit_steps(deciders, rewards, over)
    assert credit.rewards[np.array(deciders) == 1].tolist() == [reward for _, reward, _, _ in steps[1:]]


def test_rotating_seat_cycles_per_episode_and_seeded_resets_repeat():
    env = BarbuGymEnv(opponents="random", seat="rotate")
    obs_a, info = env.reset(seed=11)
    first = info["seat"]
    seats = [first] + [env.reset()[1]["seat"] for _ in range(5)]
    assert seats == [(first + k) % 4 for k in range(6)]
    obs_b, info_b = env.reset(seed=11)
    assert info_b["seat"] == first
    np.testing.assert_array_equal(obs_a, obs_b)
    assert {env.reset(seed=s)[1]["seat"] for s in range(20)} == {0, 1, 2, 3}
    assert env.reset(options={"seat": 3})[1]["seat"] == 3


def test_reset_options_pass_through():
    deal = [list(range(13 * s, 13 * s + 13)) for s in range(4)]
    env = BarbuGymEnv(opponents="random", seat=0)
    env.reset(seed=0, options={"first_declarer": 2, "deals": [deal]})
    assert env.game.first_declarer == 2 and env.game.dealt == (0x1FFF, 0x1FFF << 13, 0x1FFF << 26, 0x1FFF << 39)


def test_skip_forced_returns_only_real_choices_and_keeps_the_rewards():
    env = BarbuGymEnv(opponents="random", seat=0, skip_forced=True)
    steps = play(env, seed=2)
    masks = [info["action_mask"] for *_, info in steps[:-1]]
    assert all(m.sum() >= 2 for m in masks)
    assert sum(r for _, r, _, _ in steps) == steps[-1][3]["scores"][0]
    assert len(steps) < len(play(BarbuGymEnv(opponents="random", seat=0), seed=2))


def test_illegal_actions_raise_or_are_replaced():
    env = BarbuGymEnv(opponents="random", illegal_action="raise")
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    history = list(env.game.history)
    with pytest.raises(IllegalActionError, match="legal actions"):
        env.step(illegal)
    assert env.game.history == history
    env = BarbuGymEnv(opponents="random")
    env.reset(seed=0)
    _, _, _, _, info = env.step(illegal)
    assert info["illegal_action"] is True and env.game.history[0] != illegal


def test_opponents_by_name_list_or_object_and_errors():
    agent = make_agent("heuristic")
    env = BarbuGymEnv(opponents=["random", agent, "heuristic"], seat=0)
    env.reset(seed=0)
    assert env._opponents[1] is agent and env._opponents[2].name == "heuristic"
    with pytest.raises(ValueError, match="one agent spec or three"):
        BarbuGymEnv(opponents=["random", "random"])


def test_render_ansi_shows_the_table():
    env = BarbuGymEnv(render_mode="ansi")
    env.reset(seed=0)
    assert "Hand 1/28" in env.render()


# ---------------------------------------------------------------------- SB3 models as agents


def test_zip_files_that_are_not_maskable_ppo_models_are_refused(tmp_path):
    import zipfile

    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "not a model")
    with pytest.raises(ValueError, match="no loader handles"):
        make_agent(str(other))
    fake = tmp_path / "ppo.zip"
    with zipfile.ZipFile(fake, "w") as z:
        z.writestr("data", json.dumps({"policy_class": {"__module__": "stable_baselines3.common.policies"}}))
        z.writestr("policy.pth", b"")
    with pytest.raises(ValueError, match="not a MaskablePPO"):
        make_agent(str(fake))


# ---------------------------------------------------------------------- RLlib's multi-agent env


def test_rllib_env_gives_the_acting_seat_its_observation_and_each_seat_its_own_rewards():
    require("ray.rllib")
    from barbu_env.envs.rllib_env import OBSERVATION_SPACE, BarbuMultiAgentEnv

    env = BarbuMultiAgentEnv({"reward_scale": 1.0})
    obs, _ = env.reset(seed=7)
    totals = dict.fromkeys(AGENTS, 0.0)
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        ((agent, o),) = obs.items()  # exactly one agent acts
        assert OBSERVATION_SPACE.contains(o) and o["action_mask"].any()
        assert agent == env.env.agent_selection
        obs, rewards, terminated, truncated, _ = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
        assert set(rewards) <= set(obs)  # rewards only come with an observation
        for a, r in rewards.items():
            totals[a] += r
        steps += 1
        if terminated["__all__"]:
            break
        assert not truncated["__all__"]
    assert set(obs) == set(AGENTS) and all(terminated[a] for a in AGENTS)
    assert [totals[a] for a in AGENTS] == env.env.unwrapped.game.scores
    assert steps > 1000


def test_rllib_env_seeded_once_then_reset_unseeded_deals_the_same_games():
    require("ray.rllib")
    from barbu_env.envs.rllib_env import BarbuMultiAgentEnv

    def first_observations(seed):
        env = BarbuMultiAgentEnv({"episode": "hand"})
        out = []
        for i in range(10):
            obs, _ = env.reset(seed=seed if i == 0 else None)
            ((agent, o),) = obs.items()
            out.append((agent, o["observations"].tobytes()))
        return out

    a = first_observations(5)
    assert a == first_observations(5)
    assert len(set(a)) == len(a)  # each unseeded reset deals a new game


def test_the_masked_rllib_module_gives_illegal_actions_no_probability():
    require("ray.rllib")
    import torch

    from barbu_env.envs.rllib_env import OBSERVATION_SPACE, MaskedPPOTorchRLModule

    module = MaskedPPOTorchRLModule(
        observation_space=OBSERVATION_SPACE,
        action_space=gymnasium.spaces.Discrete(85),
        model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": []},
    )
    mask = torch.zeros(2, 85)
    mask[0, [3, 60]] = 1
    mask[1, 84] = 1
    out = module.forward_inference({"obs": {"observations": torch.rand(2, OBS_DIM), "action_mask": mask}})
    probs = torch.softmax(out["action_dist_inputs"], -1)
    assert probs[mask == 0].max() == 0 and probs[1, 84] == 1


# ---------------------------------------------------------------------- TorchRL


def test_torchrl_wrapper_credits_each_seat_with_its_rewards():
    require("torchrl")
    import torch

    from examples.torchrl_ppo import AGENT_MASK, Args, credit_by_seat, make_env

    env = make_env(Args())
    env.set_seed(0)
    td = env.rollout(3000, break_when_any_done=True)  # one whole game, random legal actions
    assert td[AGENT_MASK].sum(-1).eq(1).all()  # one seat acts per step
    rewards = td["next", "players", "reward"][..., 0]
    credit = credit_by_seat(td[AGENT_MASK], rewards, td["next", "done"].reshape(-1))
    per_seat = [float(c["rewards"].sum()) for c in credit]
    assert per_seat == rewards.sum(0).tolist() and sum(per_seat) == 0
    # Only the rewards of the steps where the seat acted would miss most of them.
    assert float((rewards * td[AGENT_MASK]).abs().sum()) < float(rewards.abs().sum())
    assert all(c["ended"][-1] for c in credit) and torch.tensor(per_seat).abs().sum() > 0


# ---------------------------------------------------------------------- Tianshou


def tianshou_collection(namespace: dict, make_env, episodes: int, seed: int):
    """Collect ``episodes`` episodes from ``make_env`` with the docs' policies, as the docs do."""
    from tianshou.data import Collector, ReplayBuffer
    from tianshou.env import DummyVectorEnv

    np.random.seed(seed)  # noqa: NPY002 (Tianshou's random policy and exploration use the global generator)
    envs = DummyVectorEnv([make_env])
    envs.seed(seed)
    collector = Collector(namespace["policy"], envs, ReplayBuffer(10_000), exploration_noise=True)
    return collector.collect(n_episode=episodes, reset_before_collect=True)


class ScoresAtTheEnd:
    """A PettingZoo wrapper factory recording the scores of every episode that ends."""

    def __init__(self):
        from pettingzoo.utils import BaseWrapper

        scores = self.scores = []

        class Recorder(BaseWrapper):
            def step(self, action):
                super().step(action)
                if action is not None and all(self.terminations.values()):
                    scores.append(list(self.unwrapped.game.scores))

        self.wrapper = Recorder


def test_tianshou_collector_returns_are_each_seats_scores_with_masked_policies():
    require("tianshou")
    from tianshou.env import PettingZooEnv

    namespace: dict = {}
    exec(compile(docs_snippet("PettingZooEnv"), "docs/integrations.md", "exec"), namespace)
    recorded = ScoresAtTheEnd()

    def make_env():  # the docs' environment, recording the scores
        return PettingZooEnv(namespace["WithoutInfos"](recorded.wrapper(barbu_env.env(episode="hand"))))

    stats = tianshou_collection(namespace, make_env, episodes=8, seed=0)
    # Every action was legal (an illegal one raises); each episode's return row is its four scores.
    assert stats.n_collected_episodes == 8 and stats.returns.shape == (8, 4)
    assert stats.returns.tolist() == recorded.scores
    assert stats.returns.any()


# ---------------------------------------------------------------------- SuperSuit


def test_docs_supersuit_snippet_transforms_the_observation_and_keeps_the_mask():
    require("supersuit")
    from pettingzoo.test import api_test

    namespace: dict = {}
    exec(compile(docs_snippet("observation_lambda_v0"), "docs/integrations.md", "exec"), namespace)
    env, plain = namespace["env"], barbu_env.env()
    env.reset(seed=2)
    plain.reset(seed=2)
    obs, expected = env.observe(env.agent_selection), plain.observe(plain.agent_selection)
    assert obs["observation"].dtype == np.float16 and env.observation_space("player_0").contains(obs)
    np.testing.assert_array_equal(obs["action_mask"], expected["action_mask"])
    np.testing.assert_array_equal(obs["observation"], expected["observation"].astype(np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Dict observation's warnings: tests/test_pettingzoo_api.py
        api_test(env, num_cycles=100)


# ---------------------------------------------------------------------- the integrations page's snippets

INTEGRATIONS = (Path(__file__).resolve().parent.parent / "docs" / "integrations.md").read_text()


def docs_snippet(marker: str) -> str:
    """The one Python block of docs/integrations.md containing ``marker``."""
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", INTEGRATIONS, flags=re.DOTALL) if marker in b]
    return block


def test_docs_gymnasium_mask_lines_give_the_mask_and_plain_action_masks_does_not():
    namespace: dict = {}
    exec(compile(docs_snippet('get_wrapper_attr("action_masks")'), "docs/integrations.md", "exec"), namespace)
    env, info, mask = namespace["env"], namespace["info"], namespace["mask"]
    expected = info["action_mask"].astype(bool)
    np.testing.assert_array_equal(mask, expected)
    # The table's mask cell for Gymnasium, evaluated as written.
    (row,) = [line for line in INTEGRATIONS.splitlines() if line.startswith("| Gymnasium, SB3 |")]
    cell = re.findall(r"`([^`]+)`", row.split(" | ")[2])[0]  # the single env's (then make_sb3_vec's)
    np.testing.assert_array_equal(eval(cell, {"env": env}), expected)


# ---------------------------------------------------------------------- short training runs


def evaluate_with_barbu_eval(spec: str, opponent: str, capsys) -> str:
    code = barbu(
        [
            "eval",
            "--agents",
            f"{spec},{opponent},{opponent},{opponent}",
            "--games",
            "8",
            "--no-progress",
            "--workers",
            "1",
            "--trust-pickled",  # SB3 and RLlib files are pickled; harmless for a .pt
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Duplicate tournament: 8 games" in out
    return out


@pytest.mark.slow
def test_sb3_maskable_ppo_trains_and_plays_in_barbu_eval(tmp_path, capsys):
    from examples import sb3_maskable_ppo

    args = sb3_maskable_ppo.Args(
        minutes=5, total_timesteps=4096, num_envs=4, n_steps=256, batch_size=256, out=str(tmp_path), torch_threads=1
    )
    summary = sb3_maskable_ppo.train(args)
    assert summary["timesteps"] >= 4096 and (tmp_path / "model.zip").exists()
    out = evaluate_with_barbu_eval(str(tmp_path / "model.zip"), "random", capsys)
    assert "model" in out


@pytest.mark.slow
def test_rllib_ppo_trains_and_plays_in_barbu_eval(tmp_path, capsys):
    require("ray.rllib")
    from examples import rllib_ppo

    args = rllib_ppo.Args(
        iterations=1, num_env_runners=1, train_batch_size=2000, minibatch_size=500, num_epochs=1, out=str(tmp_path)
    )
    summary = rllib_ppo.train(args)
    assert summary["env_steps"] >= 2000 and summary["env_steps_per_second"] > 0
    out = evaluate_with_barbu_eval(summary["checkpoint"], "heuristic", capsys)
    assert "checkpoint" in out


@pytest.mark.slow
def test_torchrl_collection_and_update_plays_in_barbu_eval(tmp_path, capsys):
    require("torchrl")
    from examples import torchrl_ppo

    summary = torchrl_ppo.run(torchrl_ppo.Args(frames=2000, out=str(tmp_path)))
    assert summary["frames"] == 2000 and summary["decisions"] > 1900 and summary["minibatches"] >= 1
    evaluate_with_barbu_eval(summary["policy"], "random", capsys)
