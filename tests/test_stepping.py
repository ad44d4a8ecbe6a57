"""The step written once for every adapter (``barbu_env.envs.stepping``) and the one reading
of an observation (``barbu_env.game.observation.read``): cheap checks of their own contracts;
the adapters' tests check each adapter's behaviour through them."""

from __future__ import annotations

import numpy as np
import pytest

from barbu_env.agents import make_agent
from barbu_env.envs.stepping import check_illegal_action, play_instead, play_turns
from barbu_env.game.engine import BarbuState, IllegalActionError
from barbu_env.game.observation import read


def game(seed: int = 0) -> BarbuState:
    return BarbuState.new_game(rng=np.random.default_rng(seed), first_declarer=0)


def test_play_turns_plays_the_others_until_the_seat_is_to_choose():
    state = game()
    agents = [make_agent("random", seed=s) for s in range(4)]
    agents[2] = None  # the seat played by the caller is never asked
    for _ in range(30):
        before = len(state.results)
        results = play_turns(state, agents, until=2)
        assert state.current_player == 2 and state.results[before:] == results
        state.apply_action(state.legal_actions()[0])


def test_play_turns_stops_once_the_hands_asked_are_played():
    state = game(1)
    results = play_turns(state, [make_agent("random", seed=s) for s in range(4)], hands=2)
    assert len(state.results) == 2 and results == state.results and not state.is_terminal


def test_an_illegal_action_is_refused_or_replaced_by_one_draw_of_the_generator():
    legal = [3, 17, 52]
    with pytest.raises(IllegalActionError, match="^no$"):
        play_instead("raise", legal, np.random.default_rng(0), lambda: "no")
    rng, twin = np.random.default_rng(5), np.random.default_rng(5)
    assert play_instead("random", legal, rng, lambda: "no") == legal[int(twin.integers(len(legal)))]
    assert rng.random() == twin.random()  # exactly one draw


def test_an_unknown_illegal_action_mode_is_refused_naming_the_adapter_s_default_first():
    assert check_illegal_action("random", default="raise") == "random"
    with pytest.raises(ValueError, match=r"one of \('random', 'raise'\), not 'penalty'"):
        check_illegal_action("penalty", default="random")


def test_a_reading_of_an_observation_names_absolute_seats_and_whole_numbers():
    state = game(2)
    play_turns(state, [make_agent("random", seed=s) for s in range(4)], hands=1)
    while not (state.phase.name == "TRICKS" and state.trick_size):  # into the second hand's first trick
        state.apply_action(state.legal_actions()[0])
    for seat in range(4):
        r = read(state.observe(seat), seat)
        assert (r.to_act, r.declarer, r.hand_number) == (state.current_player, state.declarer, state.hand_number)
        assert r.hand == state.hands[seat] and list(r.scores) == state.scores
        assert list(r.tricks_won) == state.tricks_won and list(r.points) == state.points
        assert r.leader == state.leader and r.trick[state.leader] == 1 << state.trick[state.leader]
