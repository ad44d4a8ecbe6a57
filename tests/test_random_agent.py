"""The ``random`` agent draws the same actions however it is asked: ``act`` one decision
at a time, ``act_batch`` for its rows, or together with other random agents (``act_batch``
with ``instances``, through ``act_rows``); each instance from its own generator."""

from __future__ import annotations

import numpy as np
import pytest

from barbu_env.agents import act_rows, make_agent
from barbu_env.agents.random_agent import RandomAgent
from barbu_env.game.actions import NUM_ACTIONS


def random_masks(rng: np.random.Generator, rows: int) -> np.ndarray:
    """int8 masks with 1 to 85 legal actions per row, at random places."""
    masks = (rng.random((rows, NUM_ACTIONS)) < rng.random((rows, 1))).astype(np.int8)
    masks[np.arange(rows), rng.integers(NUM_ACTIONS, size=rows)] = 1
    return masks


def one_by_one(agent: RandomAgent, masks: np.ndarray) -> list[int]:
    return [agent.act({"observation": np.zeros(1, np.float32), "action_mask": m}) for m in masks]


@pytest.mark.parametrize("rows", [0, 1, 7, 300])
def test_act_batch_draws_what_act_draws_row_by_row(rows):
    masks = random_masks(np.random.default_rng(rows), rows)
    batch, single = RandomAgent(3), RandomAgent(3)
    actions = batch.act_batch(np.zeros((rows, 1), np.float32), masks)
    assert actions.dtype == np.int64 and actions.shape == (rows,)
    assert actions.tolist() == one_by_one(single, masks)
    assert batch.rng.random() == single.rng.random()  # the generator is left where act leaves it


def test_act_rows_groups_random_agents_each_drawing_from_its_own_generator():
    rng = np.random.default_rng(0)
    masks = random_masks(rng, 200)
    who = rng.integers(3, size=200)
    grouped, alone = [make_agent("random", seed=s) for s in range(3)], [make_agent("random", seed=s) for s in range(3)]
    actions = act_rows([grouped[k] for k in who], np.zeros((200, 1), np.float32), masks)
    expected = [alone[k].act({"observation": None, "action_mask": m}) for k, m in zip(who, masks)]
    assert actions.tolist() == expected
    assert all(masks[np.arange(200), actions] == 1)


def test_draws_are_uniform_over_the_legal_actions():
    masks = np.zeros((60_000, NUM_ACTIONS), np.int8)
    masks[:, [3, 52, 84]] = 1
    counts = np.bincount(RandomAgent(1).act_batch(np.zeros((60_000, 1)), masks), minlength=NUM_ACTIONS)
    assert set(np.flatnonzero(counts)) == {3, 52, 84}
    assert np.all(np.abs(counts[[3, 52, 84]] / 60_000 - 1 / 3) < 0.01)
