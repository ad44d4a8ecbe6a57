"""The crediting rule (barbu_env/game/credit.py): a seat's reward runs from its decision to its
next decision, or to the end of the game. Hand-built sequences with their expected
credit, the accumulator against the pure function, and a real game."""

from __future__ import annotations

import numpy as np

import barbu_env
from barbu_env.game.constants import AGENTS
from barbu_env.game.credit import NO_DECISION, SeatCredit, credit_steps


def test_rewards_arriving_at_other_seats_steps_go_to_each_seats_latest_decision():
    # Two seats alternate; a "hand" ends at step 3 (seat 1's card) paying both seats.
    deciders = [0, 1, 0, 1, 0, 1]
    rewards = [[0, 0], [0, 0], [0, 0], [4, -4], [0, 0], [0, 0]]
    c = credit_steps(deciders, rewards, [False] * 5 + [True])
    # seat 0's decision at step 2 runs to its next one at step 4: it gets the 4 of step 3
    assert c.rewards.tolist() == [0.0, 0.0, 4.0, -4.0, 0.0, 0.0]
    assert c.next_step.tolist() == [2, 3, 4, 5, -1, -1]
    assert c.ended.tolist() == [False, False, False, False, True, True]
    assert c.complete.all()


def test_a_decisions_own_step_counts_and_its_next_decisions_step_does_not():
    deciders = [0, -1, 0, -1]  # steps 1 and 3: another player, not credited
    rewards = [[2], [3], [5], [7]]
    c = credit_steps(deciders, rewards, [False, False, False, True])
    assert c.rewards.tolist() == [5.0, 0.0, 12.0, 0.0]  # 2 + 3, then 5 + 7
    assert c.next_step.tolist() == [2, -1, -1, -1] and c.ended.tolist() == [False, False, True, False]
    assert c.complete.tolist() == [True, False, True, False]  # steps that are no decision are not complete


def test_a_game_end_closes_every_seat_and_the_next_game_starts_afresh():
    deciders = [0, 1, 0, 1, 0, 1]
    rewards = [[1, 10], [0, 0], [0, 0], [2, 20], [100, 100], [0, 5]]
    game_over = [False, False, False, True, False, False]  # a new game from step 4
    c = credit_steps(deciders, rewards, game_over)
    # seat 1's 10 at step 0 and 100 at step 4 come before its first decision of the game: nobody's
    assert c.rewards.tolist() == [1.0, 0.0, 2.0, 20.0, 100.0, 5.0]
    assert c.next_step.tolist() == [2, 3, -1, -1, -1, -1]
    assert c.ended.tolist() == [False, False, True, True, False, False]
    # the sequence stops before the outcome of the second game's decisions: partial, not complete
    assert c.complete.tolist() == [True, True, True, True, False, False]


def test_rewards_before_a_seats_first_decision_belong_to_none_of_its_decisions():
    c = credit_steps([-1, 0, -1], [[9], [1], [1]], [False, False, True])
    assert c.rewards.tolist() == [0.0, 2.0, 0.0]


def test_the_accumulator_over_many_games_gives_the_pure_functions_credit():
    # Three games stepped together, each with its own random deciders, rewards and end.
    rng = np.random.default_rng(0)
    games, steps, seats = 3, 60, 4
    deciders = rng.integers(-1, seats, size=(games, steps))
    rewards = rng.integers(-5, 6, size=(games, steps, seats)).astype(float)
    ends = rng.integers(20, steps, size=games)
    expected = [
        credit_steps(deciders[g, : ends[g] + 1], rewards[g, : ends[g] + 1], np.arange(ends[g] + 1) == ends[g])
        for g in range(games)
    ]
    credit = SeatCredit(games)
    got = np.zeros((games, steps))
    for t in range(steps):
        live = np.flatnonzero(t <= ends)
        deciding = live[deciders[live, t] != NO_DECISION]
        ids = deciding * steps + t  # a decision's id: its game and step
        closed, owed = credit.decide(deciding, deciders[deciding, t], ids)
        for i, r in zip(closed[closed != NO_DECISION], owed[closed != NO_DECISION]):
            got[i // steps, i % steps] = r
        credit.add(np.where((t <= ends)[:, None], rewards[:, t], 0.0))
        ended = np.flatnonzero(t == ends)
        if len(ended):
            latest, owed = credit.end(ended)
            for i, r in zip(latest[latest != NO_DECISION], owed[latest != NO_DECISION]):
                got[i // steps, i % steps] = r
    for g in range(games):
        np.testing.assert_array_equal(got[g, : ends[g] + 1], expected[g].rewards)


def test_over_a_real_game_each_seats_credit_sums_to_its_final_score():
    env = barbu_env.env()
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    deciders, rewards, over = [], [], []
    while not all(env.terminations.values()):
        agent = env.agent_selection
        deciders.append(AGENTS.index(agent))
        env.step(int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"]))))
        rewards.append([env.rewards[a] for a in AGENTS])
        over.append(all(env.terminations.values()))
    c = credit_steps(deciders, rewards, over)
    deciders = np.array(deciders)
    assert c.complete.all()
    for seat in range(4):
        mine = deciders == seat
        assert c.rewards[mine].sum() == env.unwrapped.game.scores[seat]
        assert c.ended[mine].tolist() == [False] * (mine.sum() - 1) + [True]
        # most of a seat's scores arrive on other seats' cards: those steps' rewards are credited all the same
        assert np.count_nonzero(c.rewards[mine]) <= 28
