"""The PettingZoo AEC environment: rewards and infos, errors, rendering (seeding in
test_seeding.py; PettingZoo's own checks in test_pettingzoo_api.py; the golden games through
the environment in test_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import barbu_env
from barbu_env.game.actions import AGENTS, action_text, parse_action
from barbu_env.game.engine import NUM_ACTIONS, IllegalActionError
from barbu_env.game.observation import OBS_DIM, STATE_DIM, decode

GOLDEN = sorted((Path(__file__).parent / "data" / "golden").glob("*.json"))


def random_actions(env, rng):
    """Play a whole game with seeded random legal actions, yielding (agent, obs, reward, info)."""
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        yield agent, obs, reward, info
        if term or trunc:
            env.step(None)
        else:
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_rewards_sum_to_final_scores_and_hand_results_are_reported():
    env = barbu_env.env()
    env.reset(seed=3)
    totals = dict.fromkeys(AGENTS, 0)
    results = {}
    for agent, _, reward, info in random_actions(env, np.random.default_rng(0)):
        totals[agent] += reward
        if "hand_result" in info:
            results[info["hand_result"]["hand"]] = info["hand_result"]
    game = env.unwrapped.game
    assert [totals[a] for a in AGENTS] == game.scores
    assert sorted(results) == list(range(28))
    for h, r in results.items():
        assert {"hand", "declarer", "contract", "dealt", "levels", "raw", "settled"} <= set(r)
        assert r == game.results[h].to_dict()
        assert sum(r["settled"]) == sum(r["raw"])


def test_reward_arrives_on_the_last_step_of_each_hand_only():
    env = barbu_env.raw_env()
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    nonzero_steps = 0
    while not env.game.is_terminal:
        hand = env.game.hand_number
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        if env.game.hand_number == hand:
            assert all(r == 0 for r in env.rewards.values())
        else:
            nonzero_steps += 1
            assert [env.rewards[a] for a in AGENTS] == list(env.game.results[-1].settled)
    assert nonzero_steps == 28
    assert all(env.terminations.values())


def test_forced_turns_are_still_put_to_the_agent():
    # The golden games hold declarers nobody doubled (only 76 legal) and Domino passes (only 84).
    forced = set()
    for path in GOLDEN:
        for d in json.loads(path.read_text())["decisions"]:
            if len(d["legal"]) == 1 and d["legal"][0] in (76, 84):
                forced.add(d["legal"][0])
    assert forced == {76, 84}


def test_illegal_action_raises_naming_the_legal_ones_and_changes_nothing():
    env = barbu_env.env()
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(200):  # into the middle of the first hand's play
        obs, *_ = env.last()
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    agent = env.agent_selection
    before = env.last()
    state_before = env.state()
    illegal = int(np.flatnonzero(before[0]["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError) as err:
        env.step(illegal)
    assert isinstance(err.value, ValueError)
    msg = str(err.value)
    assert str(illegal) in msg and action_text(illegal) in msg
    for a in np.flatnonzero(before[0]["action_mask"]):
        assert action_text(int(a)) in msg
    after = env.last()
    assert env.agent_selection == agent
    np.testing.assert_array_equal(after[0]["observation"], before[0]["observation"])
    np.testing.assert_array_equal(after[0]["action_mask"], before[0]["action_mask"])
    np.testing.assert_array_equal(env.state(), state_before)
    with pytest.raises(IllegalActionError):
        env.step(NUM_ACTIONS)
    env.step(int(np.flatnonzero(before[0]["action_mask"])[0]))  # the game goes on


def test_deals_are_used_in_order_and_accept_text():
    deal = [list(range(s * 13, s * 13 + 13)) for s in range(4)]
    text_deal = [[barbu_env.card_text(c) for c in hand] for hand in reversed(deal)]
    env = barbu_env.env()
    env.reset(seed=0, options={"deals": [deal, text_deal], "first_declarer": 1})
    game = env.unwrapped.game
    assert game.declarer == 1 and game.hands == [sum(1 << c for c in h) for h in deal]
    rng = np.random.default_rng(0)
    while game.hand_number == 0:
        env.step(int(rng.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
    assert game.hands == [sum(1 << c for c in h) for h in reversed(deal)]


def test_observation_and_state_fit_their_spaces_and_decode():
    env = barbu_env.env()
    env.reset(seed=2)
    obs, *_ = env.last()
    assert obs["observation"].shape == (OBS_DIM,) and obs["observation"].dtype == np.float32
    assert env.observation_space("player_0").contains(obs)
    assert env.state().shape == (STATE_DIM,) and env.unwrapped.state_space.contains(env.state())
    parts = decode(obs["observation"])
    seat = int(env.agent_selection[-1])
    hand_cards = np.flatnonzero(parts["hand"])
    assert sum(1 << int(c) for c in hand_cards) == env.unwrapped.game.hands[seat]
    # the acting agent sees its mask; the others see zeros
    for agent in AGENTS:
        mask = env.observe(agent)["action_mask"]
        assert (mask.sum() > 0) == (agent == env.agent_selection)


def test_render_human_prints(capsys):
    env = barbu_env.env(render_mode="human")
    env.reset(seed=1)
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
    assert "Hand 1/28" in capsys.readouterr().out


def test_rules_are_selected_by_preset_or_mapping():
    assert barbu_env.raw_env(rules="rotating").rules.rotation == "every_hand"
    assert barbu_env.raw_env(rules={"redouble_pass": True}).rules.redouble_pass


def test_action_text_round_trips():
    assert [parse_action(action_text(a)) for a in range(NUM_ACTIONS)] == list(range(NUM_ACTIONS))
