"""The information state (``barbu_env.game.observation.INFO_SLICES``): the observation followed by
the seat's perfect recall of the hand under way, through ``BarbuState.information_state``,
the AEC environment's and ``VectorBarbu``'s ``observation="information_state"``. Its values
against the oracle, decision by decision: ``tests/test_oracle.py`` (``tests/differential.py``);
here, what its slices mean in scripted hands, and what it keeps and forgets."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import barbu_env
from barbu_env.game import _kernels as K
from barbu_env.game.actions import AGENTS, DECLARE_OFFSET, DOUBLE_OFFSET, PASS_ACTION, RANK_OFFSET
from barbu_env.game.constants import Contract, Phase
from barbu_env.game.engine import BarbuState
from barbu_env.game.observation import (
    INFO_DIM,
    INFO_HIGH,
    INFO_LAYOUT,
    INFO_LOW,
    INFO_OFFSETS,
    INFO_SLICES,
    OBS_DIM,
    OBS_HIGH,
    OBS_LOW,
    OFFSETS,
    SLICES,
    card_set,
    decode,
    decode_information_state,
    information_state_bounds,
)
from barbu_env.game.position import Positions
from barbu_env.game.rules import Rules
from barbu_env.game.vector import VectorBarbu

RECORD = ("dealt", "play_order", "doubling_turns", "domino_passes")


def random_play(state: BarbuState, rng: np.random.Generator, actions: int) -> None:
    for _ in range(actions):
        if state.is_terminal:
            return
        legal = state.legal_actions()
        state.apply_action(legal[int(rng.integers(len(legal)))])


def test_the_layout_is_the_observation_then_the_record():
    assert INFO_SLICES[: len(SLICES)] == SLICES
    assert [name for name, _ in INFO_SLICES[len(SLICES) :]] == list(RECORD)
    assert INFO_DIM == OBS_DIM + 52 + 52 * 52 + 7 * 8 + 4 * 52 == 4152
    assert INFO_LAYOUT == 1
    assert all(INFO_OFFSETS[name] == OFFSETS[name] for name in OFFSETS)
    assert np.array_equal(INFO_LOW[:OBS_DIM], OBS_LOW) and np.array_equal(INFO_HIGH[:OBS_DIM], OBS_HIGH)
    assert (INFO_LOW[OBS_DIM:] == 0).all() and (INFO_HIGH[OBS_DIM:] == 1).all()
    # The kernels write it at the offsets of this module, and hold those in FROZEN.
    assert (K.O_DEALT, K.O_PLAY_ORDER, K.O_DOUBLING_TURNS, K.O_DOMINO_PASSES, K.INFO_DIM) == (
        *(INFO_OFFSETS[name][0] for name in RECORD),
        INFO_DIM,
    )
    assert {K.O_DEALT, K.O_PLAY_ORDER, K.O_DOUBLING_TURNS, K.O_DOMINO_PASSES, K.INFO_DIM} <= set(K.FROZEN)
    assert K.compiled_constants() == K.FROZEN


def test_decode_information_state_names_the_slices_of_a_batch_and_rejects_an_observation():
    s = BarbuState.new_game(rng=np.random.default_rng(0))
    batch = np.stack([s.information_state(seat) for seat in range(4)])
    parts = decode_information_state(batch)
    assert list(parts) == [name for name, _ in INFO_SLICES]
    assert parts["play_order"].shape == (4, 52, 52) and parts["doubling_turns"].shape == (4, 7, 8)
    for seat in range(4):
        assert card_set(parts["dealt"][seat]) == s.dealt[seat] == card_set(parts["hand"][seat])
    with pytest.raises(ValueError, match="4152"):
        decode_information_state(s.observe(0))
    with pytest.raises(ValueError, match="1132"):
        decode(batch)


# ---------------------------------------------------------------------- the order of play


def play_order_twins() -> tuple[BarbuState, BarbuState, int]:
    """Two states of one No Tricks hand that differ only in the order of two tricks, k and
    k + 1, both led and won by the same seat: the same cards played by the same seats."""
    for seed in range(200):
        base = BarbuState.new_game("standard", rng=np.random.default_rng(seed), first_declarer=0)
        for a in (DECLARE_OFFSET + Contract.NO_TRICKS, *[DOUBLE_OFFSET] * 4):  # No Tricks; nobody doubles
            base.apply_action(a)
        line = base.clone()
        leaders = []
        while line.phase is Phase.TRICKS:
            leaders.append(line.leader)
            random_play(line, np.random.default_rng(seed), 4)
        plays = line.history[len(base.history) :]
        for k in range(len(leaders) - 2):
            if leaders[k] == leaders[k + 1] == leaders[k + 2]:
                tricks = [plays[4 * t : 4 * t + 4] for t in range(k + 2)]
                tricks[k], tricks[k + 1] = tricks[k + 1], tricks[k]
                one, two = base.clone(), base.clone()
                try:
                    for a in plays[: 4 * (k + 2)]:
                        one.apply_action(a)
                    for a in sum(tricks, []):
                        two.apply_action(a)
                except ValueError:  # the swapped tricks are not legal in that order
                    continue
                return one, two, k
    raise AssertionError("no two tricks led and won by the same seat that can be swapped")


def test_two_histories_differing_only_in_play_order_have_one_observation_and_two_information_states():
    one, two, k = play_order_twins()
    for seat in range(4):
        a, b = one.information_state(seat), two.information_state(seat)
        assert np.array_equal(one.observe(seat), two.observe(seat))
        assert np.array_equal(a[:OBS_DIM], b[:OBS_DIM])
        da, db = decode_information_state(a), decode_information_state(b)
        differ = [name for name in da if not np.array_equal(da[name], db[name])]
        assert differ == ["play_order"]
        rows = np.flatnonzero((da["play_order"] != db["play_order"]).any(axis=1))
        assert rows.tolist() == list(range(4 * k, 4 * k + 8))  # exactly the two swapped tricks
        assert np.array_equal(da["play_order"][4 * k : 4 * k + 4], db["play_order"][4 * k + 4 : 4 * k + 8])


def test_play_order_lists_the_cards_of_the_hand_in_the_order_they_were_played():
    one, _, k = play_order_twins()
    plays = one.history[5:]
    for seat in range(4):
        order = decode_information_state(one.information_state(seat))["play_order"]
        assert order.sum() == len(plays) == 4 * (k + 2)
        assert [int(np.flatnonzero(order[n])[0]) for n in range(len(plays))] == plays
        assert not order[len(plays) :].any()


# ---------------------------------------------------------------------- doubling


def test_a_doubling_sequence_with_a_redouble_pass_is_recorded_turn_by_turn():
    s = BarbuState.new_game(Rules(redouble_pass=True), rng=np.random.default_rng(2), first_declarer=0)
    s.apply_action(DECLARE_OFFSET + Contract.NO_TRICKS)
    # Turns: seat 1 nobody; seat 2 doubles seat 1 (its right: bit 2); seat 3 and the declarer
    # nobody; then seat 1's redouble pass: it redoubles seat 2 (its left: bit 0).
    script = [(1, 0), (2, 4), (3, 0), (0, 0), (1, 1)]
    expected = np.zeros((4, 7, 8), dtype=np.float32)  # per observer seat
    for t, (actor, b) in enumerate(script):
        assert s.current_player == actor and s.phase is Phase.DOUBLE
        s.apply_action(DOUBLE_OFFSET + b)
        named = [(actor + 1 + j) % 4 for j in range(3) if (b >> j) & 1]
        for seat in range(4):
            expected[seat, t, (actor - seat) % 4] = 1.0
            for p in named:
                expected[seat, t, 4 + (p - seat) % 4] = 1.0
            turns = decode_information_state(s.information_state(seat))["doubling_turns"]
            assert np.array_equal(turns, expected[seat]), (t, seat)
    assert s.phase is Phase.TRICKS and s.levels()[1][2] == 2  # redoubled
    # From seat 0: turn 1 by relative seat 2 naming relative seat 1; turn 4 by 1 naming 2.
    turns = decode_information_state(s.information_state(0))["doubling_turns"]
    assert np.flatnonzero(turns[1]).tolist() == [2, 5] and np.flatnonzero(turns[4]).tolist() == [1, 6]
    assert not turns[5:].any()


# ---------------------------------------------------------------------- Domino


def test_a_domino_hand_records_each_pass_with_the_cards_placed_before_it():
    s = BarbuState.new_game("standard", rng=np.random.default_rng(3), first_declarer=0)
    s.apply_action(DECLARE_OFFSET + Contract.DOMINO)
    s.apply_action(RANK_OFFSET + 5)  # start at the 7s
    for _ in range(4):
        s.apply_action(DOUBLE_OFFSET)
    placed, passes = [], []
    while True:  # to the last decision of the hand (its last action starts the next hand)
        seat, legal = s.current_player, s.legal_actions()
        line = s.clone()
        line.apply_action(legal[-1])
        if line.hand_number > 0:
            break
        if legal == [PASS_ACTION]:
            passes.append((seat, len(placed)))
        else:
            placed.append(legal[-1])
        s = line
    assert len(passes) >= 3 and len({seat for seat, _ in passes}) >= 2
    for observer in range(4):
        d = decode_information_state(s.information_state(observer))
        assert sorted((int(r), int(k)) for r, k in np.argwhere(d["domino_passes"])) == sorted(
            ((seat - observer) % 4, n) for seat, n in passes
        )
        assert [int(np.flatnonzero(d["play_order"][n])[0]) for n in range(len(placed))] == placed
        assert d["play_order"].sum() == len(placed)
        assert card_set(d["dealt"]) == s.dealt[observer]
    # Seat 0's view of the turns: relative seats 1, 2, 3, 0 in order, nobody named.
    d = decode_information_state(s.information_state(0))
    assert [int(np.flatnonzero(row)[0]) for row in d["doubling_turns"][:4]] == [1, 2, 3, 0]


# ---------------------------------------------------------------------- what it keeps and forgets


def test_a_new_hand_starts_with_an_empty_record_and_the_game_end_keeps_the_last_one():
    s = BarbuState.new_game("standard", rng=np.random.default_rng(4), first_declarer=0, episode="hand")
    rng = np.random.default_rng(4)
    random_play(s, rng, 40)
    assert s.phase is Phase.TRICKS
    before = decode_information_state(s.information_state(2))
    assert before["play_order"].any() and before["doubling_turns"].any()
    t = BarbuState.new_game("standard", rng=np.random.default_rng(4), first_declarer=0)
    for a in s.history:
        t.apply_action(a)
    while t.hand_number == 0:
        random_play(t, rng, 1)
    d = decode_information_state(t.information_state(2))
    assert card_set(d["dealt"]) == t.dealt[2] == card_set(d["hand"])
    assert not (d["play_order"].any() or d["doubling_turns"].any() or d["domino_passes"].any())
    # A one-hand episode, over: the record is the hand's, its cards all played (or the hand ended early).
    random_play(s, rng, 10_000)
    assert s.is_terminal
    d = decode_information_state(s.information_state(2))
    assert d["play_order"].sum() == sum(int(p).bit_count() for p in s.played) > 0
    assert d["doubling_turns"][:4].sum() >= 4


def test_a_clone_and_a_pickled_copy_keep_the_record():
    s = BarbuState.new_game(rng=np.random.default_rng(5))
    random_play(s, s.rng, 70)
    for copy in (s.clone(), pickle.loads(pickle.dumps(s))):
        for seat in range(4):
            assert np.array_equal(copy.information_state(seat), s.information_state(seat))
        random_play(copy, np.random.default_rng(0), 30)
        line = s.clone()
        random_play(line, np.random.default_rng(0), 30)
        assert np.array_equal(copy.information_state(1), line.information_state(1))


def test_a_position_loaded_into_vector_barbu_keeps_its_recorded_history():
    s = BarbuState.new_game(Rules(redouble_pass=True), rng=np.random.default_rng(6))
    random_play(s, np.random.default_rng(6), 45)
    assert s.phase is Phase.TRICKS
    vec = VectorBarbu(2, rules=Rules(redouble_pass=True), observation="information_state")
    obs, masks, seat = vec.load(Positions.concatenate([Positions.from_state(s)] * 2))
    assert obs.shape == (2, INFO_DIM) and vec.obs_dim == INFO_DIM
    assert np.array_equal(obs[0], s.information_state(s.current_player))
    played = sum(int(p).bit_count() for p in s.played)
    assert played >= 30 and decode_information_state(obs[0])["play_order"].sum() == played
    # ... and plays on with it as the state does.
    rng = np.random.default_rng(7)
    for _ in range(60):
        a = s.legal_actions()[int(rng.integers(len(s.legal_actions())))]
        s.apply_action(a)
        obs, masks, seat, *_ = vec.step(np.array([a, a]))
        assert np.array_equal(obs[1], s.information_state(s.current_player))
    # A position built from an observation has no record: the observation does not carry one.
    p = Positions.from_observation(s.observe(s.current_player), s.rules, seat=s.current_player)
    p = p.with_hidden([[s.hands[(s.current_player + r) % 4] for r in (1, 2, 3)]])
    obs, *_ = vec.load(p, slots=[0])
    d = decode_information_state(obs[0])
    assert np.array_equal(obs[0][:OBS_DIM], s.observe(s.current_player))
    assert not (d["play_order"].any() or d["doubling_turns"].any())


# ---------------------------------------------------------------------- the environments


def test_the_aec_environment_gives_information_states_on_request():
    env = barbu_env.env(observation="information_state")
    plain = barbu_env.env()
    assert env.observation_space(AGENTS[0])["observation"].shape == (INFO_DIM,)
    assert np.array_equal(env.observation_space(AGENTS[0])["observation"].high, information_state_bounds()[1])
    assert plain.observation_space(AGENTS[0])["observation"].shape == (OBS_DIM,)
    for e in (env, plain):
        e.reset(seed=8)
    rng = np.random.default_rng(8)
    for _ in range(80):
        agent = env.agent_selection
        seen, other = env.observe(agent), plain.observe(agent)
        assert env.observation_space(agent).contains(seen)
        assert np.array_equal(seen["observation"], env.unwrapped.game.information_state(AGENTS.index(agent)))
        assert np.array_equal(seen["observation"][:OBS_DIM], other["observation"])
        assert np.array_equal(seen["action_mask"], other["action_mask"])
        assert np.array_equal(env.state(), plain.state())
        a = int(rng.choice(np.flatnonzero(seen["action_mask"])))
        env.step(a)
        plain.step(a)


def test_an_unknown_observation_kind_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="'observation', 'information_state'"):
        barbu_env.env(observation="infostate")
    assert VectorBarbu(1).obs_dim == OBS_DIM
