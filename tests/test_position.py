"""Positions loaded into the batched engine play on exactly as the game they were taken
from. Seeded random games are played in the AEC environment (``barbu_env.env()``) under
every preset and the extra switch sets of the oracle tests; at many decisions (every
doubling turn of the first hands, where the redoubling pass is, and a spread of others)
the game is taken as a position twice: from its state (``Positions.from_state``) and
from one seat's observation plus the true hidden hands and later deals
(``Positions.from_observation(...).with_hidden(...).with_future_deals(...)``). Every
position goes into a slot of one ``VectorBarbu``, and each slot replays the rest of the
game with the environment's actions: every later decision's observation, mask and seat
to act, every step's rewards and the end of the game must be the environment's."""

from __future__ import annotations

import numpy as np
import pytest
from test_oracle import RULESETS

import barbu_env
from barbu_env.game.actions import AGENTS
from barbu_env.game.constants import NUM_HANDS, Phase
from barbu_env.game.observation import OBS_DIM
from barbu_env.game.position import Positions
from barbu_env.game.vector import VectorBarbu

SNAPSHOT_EVERY = 41  # decisions between snapshots, besides the doubling turns of hands 0-2


def record_game(rules, seed: int):
    """Play a random game in the environment; return its decisions (seat, obs, mask,
    action, rewards of the step) and the positions taken along the way with their
    decision index."""
    env = barbu_env.env(rules=rules)
    env.reset(seed=seed)
    game = env.unwrapped.game
    rng = np.random.default_rng(seed)
    log, snapshots = [], []
    t = 0
    while not game.is_terminal:
        cur = game.current_player
        o = env.observe(AGENTS[cur])
        if t % SNAPSHOT_EVERY == 0 or (game.phase == Phase.DOUBLE and game.hand_number < 3):
            exact = Positions.from_state(game)
            observer = int(rng.integers(4))
            seen = env.observe(AGENTS[observer])["observation"]
            hidden = [[game.hands[(observer + r) % 4] for r in (1, 2, 3)]]
            h = game.hand_number
            from_obs = (
                Positions.from_observation(seen, rules, seat=observer)
                .with_hidden(hidden)
                .with_future_deals(exact.preset[:, h + 1 : NUM_HANDS])
            )
            snapshots += [(t, exact), (t, from_obs)]
        action = int(rng.choice(np.flatnonzero(o["action_mask"])))
        env.step(action)
        log.append(
            (cur, o["observation"].copy(), o["action_mask"].astype(bool), action, [env.rewards[a] for a in AGENTS])
        )
        t += 1
    return log, snapshots


@pytest.mark.parametrize(
    "name", [n if n in ("standard", "rotating") else pytest.param(n, marks=pytest.mark.slow) for n in RULESETS]
)
def test_positions_from_the_state_and_from_an_observation_play_on_as_the_environment(name):
    rules = RULESETS[name]
    log, snapshots = record_game(rules, seed=11 + len(name))
    assert any(log[t][2][76:84].sum() > 1 for t, _ in snapshots)  # doubling choices among the positions
    vec = VectorBarbu(len(snapshots), rules=rules, seed=0)
    obs, masks, seat = vec.load(Positions.concatenate([p for _, p in snapshots]))
    at = np.array([t for t, _ in snapshots])
    alive = np.ones(len(at), dtype=bool)
    compared = 0
    while alive.any():
        for k in np.flatnonzero(alive):
            s, o, m, _, _ = log[at[k]]
            assert seat[k] == s and (masks[k] == m).all() and (obs[k] == o).all(), (name, k, at[k])
            compared += 1
        actions = np.where(alive, [log[t][3] if t < len(log) else 0 for t in at], masks.argmax(axis=1))
        obs, masks, seat, rewards, dones, infos = vec.step(actions)
        for k in np.flatnonzero(alive):
            assert rewards[k].tolist() == log[at[k]][4], (name, k, at[k])
            assert dones[k] == (at[k] == len(log) - 1)
        at[alive] += 1
        alive &= ~dones
    assert compared > 10 * len(log)


def test_an_observation_shows_the_unknown_cards_and_the_hand_sizes():
    env = barbu_env.env()
    env.reset(seed=3)
    game = env.unwrapped.game
    rng = np.random.default_rng(3)
    while game.hand_number == 0 and not (game.phase == Phase.TRICKS and game.trick_number == 5):
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    p = Positions.from_observation(env.observe("player_2")["observation"], game.rules, seat=2)
    assert int(p.unknown_cards[0]) == game.hands[0] | game.hands[1] | game.hands[3]
    assert p.sizes[0].tolist() == [int(h).bit_count() for h in game.hands]
    assert p.excluded[0].tolist() == game.excluded


def test_hidden_hands_that_do_not_fit_the_observation_are_refused():
    env = barbu_env.env()
    env.reset(seed=4)
    game = env.unwrapped.game
    for _ in range(5 + 10):  # declare, doubling turns, then some cards
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))
    p = Positions.from_observation(env.observe("player_0")["observation"], game.rules)
    right = [game.hands[1], game.hands[2], game.hands[3]]
    p.with_hidden([right])  # the truth fits
    swapped = [right[1], right[0], right[2]]
    if right[0].bit_count() != right[1].bit_count():
        with pytest.raises(ValueError, match="holds"):
            p.with_hidden([swapped])
    lowest = right[0] & -right[0]
    with pytest.raises(ValueError, match="unknown cards"):
        p.with_hidden([[right[0] ^ lowest, right[1] | lowest | game.hands[0], right[2]]])
    with pytest.raises(ValueError, match="observation is float"):
        Positions.from_observation(np.zeros(OBS_DIM - 1))


def _random_play(state, rng, steps: int) -> None:
    for _ in range(steps):
        if state.is_terminal:
            return
        state.apply_action(int(rng.choice(state.legal_actions())))


def test_a_state_made_from_a_position_plays_on_as_the_game_to_the_end_of_its_episode():
    from barbu_env.game.engine import BarbuState

    rng = np.random.default_rng(3)
    game = BarbuState.new_game(rng=np.random.default_rng(4))
    _random_play(game, rng, 70)
    start = game.hand_number
    copy = BarbuState.from_position(Positions.from_state(game), episode="hand")
    assert copy.history == [] and copy.results == []
    while not copy.is_terminal:
        assert copy.current_player == game.current_player and copy.legal_mask() == game.legal_mask()
        seat = copy.current_player
        assert np.array_equal(copy.observe(seat), game.observe(seat))
        action = int(rng.choice(copy.legal_actions()))
        assert copy.apply_action(action) == game.apply_action(action)
    assert copy.results[-1].hand == start and game.hand_number == start + 1
    assert copy.scores == game.scores


def test_a_hand_dealt_again_before_its_declaration_is_played_with_the_new_deal():
    from barbu_env.game.engine import BarbuState

    rng = np.random.default_rng(5)
    state = BarbuState.new_game(rng=np.random.default_rng(6), first_declarer=1)
    other = state.clone()
    deal = [list(range(13 * k, 13 * k + 13)) for k in range(4)]  # one suit each
    state.deal_hand(deal)
    assert state.hands == list(state.dealt) == [sum(1 << c for c in hand) for hand in deal]
    assert other.hands != state.hands, "a clone keeps its own deal"
    _random_play(state, rng, 5)
    with pytest.raises(ValueError, match="before its declaration"):
        state.deal_hand(deal)
    while state.hand_number == 0:
        _random_play(state, rng, 1)
    assert state.results[0].dealt == tuple(sum(1 << c for c in hand) for hand in deal)
    before = other.clone()  # made in hand 0: reaches hand 1 with the deal it had
    state.deal_hand(list(reversed(deal)))  # hand 1, in its declaration
    assert state.hands[0] == sum(1 << c for c in deal[3]) and state.current_player == 1
    assert len(state.deals) == 2
    expected = BarbuState.new_game(rng=np.random.default_rng(6), first_declarer=1)._preset[0, 1].tolist()
    while before.hand_number == 0:
        _random_play(before, rng, 1)
    assert before.hands == expected
