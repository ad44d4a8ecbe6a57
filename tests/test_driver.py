"""The batched play driver (``barbu_env.game.driver``) and the one agent protocol (``barbu_env.agents.Agent``)."""

from __future__ import annotations

import numpy as np
import pytest

from barbu_env.agents import Agent, act_rows, ask, make_agent
from barbu_env.game.actions import AGENTS
from barbu_env.game.driver import Seated, play
from barbu_env.game.engine import BarbuState, IllegalActionError
from barbu_env.game.rules import Rules
from barbu_env.game.vector import VectorBarbu


def first_legal(rows, obs, masks, seats):
    return np.asarray(masks).argmax(axis=1)


def test_games_play_to_the_end_of_their_episode_and_their_scores_are_the_totals():
    env = VectorBarbu(3, seed=4, copy=False, episode="round")
    ended = []
    played = play(
        env, Seated.everywhere(make_agent("random", seed=1), 3), env.reset(), on_step=lambda s: ended.extend(s.ended)
    )
    assert sorted(ended) == [0, 1, 2]  # each game ends once, and is over after that
    finals = {}
    env2 = VectorBarbu(3, seed=4, copy=False, episode="round")
    obs, masks, seat = env2.reset()
    agent, live = make_agent("random", seed=1), np.ones(3, bool)
    while live.any():  # the same games by hand: the same random draws in the same order
        rows = np.flatnonzero(live)
        actions = masks.argmax(1)
        actions[rows] = agent.act_batch(obs[rows], masks[rows].view(np.int8))
        obs, masks, seat, _, dones, infos = env2.step(actions)
        for g in np.flatnonzero(dones & live):
            finals[g] = infos["final_scores"][g].tolist()
        live &= ~dones
    assert [played.scores[g].tolist() for g in range(3)] == [finals[g] for g in range(3)]


def test_until_hand_stops_each_game_when_its_hand_settles():
    env = VectorBarbu(4, seed=2, copy=False)
    played = play(env, first_legal, env.reset(), until="hand", hands=True)
    assert (env.hand_numbers() == 1).all()  # every game stopped after its first hand
    assert np.array_equal(played.scores, played.hands.settled[:, 0])
    assert (played.lengths > 30).all() and played.decisions == played.lengths.sum()


def test_forced_decisions_are_played_without_asking_when_asked_not_to():
    fewest, asked = [], []

    def decide(rows, obs, masks, seats):
        fewest.append(int(masks.sum(axis=1).min()))
        asked.append(len(rows))
        return first_legal(rows, obs, masks, seats)

    env = VectorBarbu(2, seed=3, copy=False, episode="hand")
    played = play(env, decide, env.reset(), ask_forced=False)
    assert min(fewest) > 1  # never a forced decision
    assert played.decisions > sum(asked)  # the forced ones were played all the same


def test_decide_gets_the_asked_games_rows_as_the_engine_gives_them():
    env = VectorBarbu(3, seed=5, episode="hand")  # copy=True: start stays as it was
    start = env.reset()
    calls = []

    def decide(rows, obs, masks, seats):
        assert rows.tolist() == sorted(rows.tolist()) and masks.dtype == np.int8
        calls.append((rows.copy(), obs.copy(), masks.copy(), seats.copy()))
        return agent.act_batch(obs, masks)

    agent = make_agent("random", seed=2)  # games of different lengths

    play(env, decide, start)
    rows, obs, masks, seats = calls[0]
    assert rows.tolist() == [0, 1, 2]
    assert np.array_equal(obs, start[0]) and np.array_equal(masks, start[1]) and np.array_equal(seats, start[2])
    assert any(len(c[0]) < 3 for c in calls)  # games over are no longer asked


def test_first_actions_replace_the_first_decisions():
    env = VectorBarbu(2, seed=6, copy=False, episode="hand")
    obs, masks, seat = env.reset()
    declare_last = np.array([np.flatnonzero(m)[-1] for m in masks])
    history = play(env, first_legal, (obs, masks, seat), first=declare_last, history=True)
    assert [history.history(g)[0] for g in range(2)] == declare_last.tolist()


def test_the_history_replays_to_the_same_game():
    env = VectorBarbu(1, seed=8, copy=False, episode="hand")  # (later deals come from the engine's stream)
    start = env.reset()
    state = BarbuState.from_position(env.positions(), 0, Rules(), episode="hand")
    played = play(env, Seated.everywhere(make_agent("heuristic"), 1), start, history=True, hands=True)
    for action in played.history(0):
        state.apply_action(action)
    assert state.is_terminal and state.scores == played.scores[0].tolist()
    assert state.results[0].declarer == played.hands.declarer[0, 0]
    assert list(state.results[0].settled) == played.hands.settled[0, 0].tolist()


def test_an_illegal_action_names_the_agent_and_its_seat():
    class Stubborn(Agent):
        name = "stubborn"

        def act(self, observation, agent=None):
            return 84

    env = VectorBarbu(2, seed=1, copy=False)
    with pytest.raises(IllegalActionError, match=r"agent 'stubborn' in seat \d: illegal action 84"):
        play(env, Seated.everywhere(Stubborn(), 2), env.reset())


def test_without_an_end_the_games_play_on_until_on_step_says_stop():
    env = VectorBarbu(2, seed=1, copy=False, episode="hand")
    count = {"dones": 0}

    def tick(step):
        count["dones"] += int(step.dones.sum())
        return count["dones"] >= 5

    play(env, first_legal, env.reset(), until=None, on_step=tick)
    assert count["dones"] >= 5  # more episodes than games: they went on through the resets


# ---------------------------------------------------------------------- the agent protocol


def test_an_agent_writes_act_or_act_batch_and_is_served_the_other():
    with pytest.raises(TypeError, match="writes act_batch or act"):

        class Nothing(Agent):
            pass

    names = []

    class ByRow(Agent):
        def act(self, observation, agent=None):
            names.append(agent)
            return int(np.flatnonzero(observation["action_mask"])[0])

    class ByBatch(Agent):
        def act_batch(self, observations, masks):
            return np.asarray(masks).argmax(axis=1)

    masks = np.zeros((3, 85), np.int8)
    masks[:, [60, 70]] = 1
    obs = np.zeros((3, 1132), np.float32)
    assert ask(ByRow(), obs, masks, ["player_1", "player_2", "player_3"]).tolist() == [60, 60, 60]
    assert names == ["player_1", "player_2", "player_3"]  # row by row, each with its agent's name
    assert ByBatch().act({"observation": obs[0], "action_mask": masks[0]}) == 60


def test_an_object_with_only_act_is_served_row_by_row_with_names():
    class Plain:
        def act(self, observation, agent=None):
            assert agent in AGENTS
            return int(np.flatnonzero(observation["action_mask"])[-1])

    env = VectorBarbu(2, seed=9, copy=False, episode="hand")
    played = play(env, Seated.everywhere(Plain(), 2), env.reset())
    assert (played.lengths > 0).all()


def test_instances_sharing_a_batch_key_are_asked_in_one_call_each_with_its_own_generator():
    calls = []

    class Shared(Agent):
        batch_key = "shared"

        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def act_batch(self, observations, masks, instances=None):
            instances = instances or [self] * len(observations)
            calls.append(len(instances))
            return np.array([np.flatnonzero(m)[a.rng.integers(m.sum())] for a, m in zip(instances, masks)])

    a, b = Shared(1), Shared(2)
    masks = np.ones((5, 85), np.int8)
    other = make_agent("heuristic")  # another group: asked on its own
    got = act_rows([a, b, a, other, b], np.zeros((5, 1132), np.float32), masks)
    assert calls == [4]  # one call for the four rows of the shared key
    got = got[[0, 1, 2, 4]]
    a2, b2 = Shared(1), Shared(2)
    assert got.tolist() == [
        int(a2.rng.integers(85)),
        int(b2.rng.integers(85)),
        int(a2.rng.integers(85)),
        int(b2.rng.integers(85)),
    ]
