"""Observations: every slice decodes to the public facts it names, the incremental
encoder equals a fresh one, nothing hidden leaks in, and ``observation.read`` gives the
state's public facts back in absolute seats and whole numbers."""

from __future__ import annotations

import numpy as np
import pytest

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.envs.stepping import play_turns
from barbu_env.game.engine import NUM_HANDS, BarbuState, Phase
from barbu_env.game.observation import OBS_DIM, OFFSETS, STATE_DIM, card_set, decode, read


def game_states(seed: int, rules="standard", every: int = 1):
    """Seeded random game; yields the live state (do not keep it) every ``every`` decisions."""
    state = BarbuState.new_game(rules, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1000)
    i = 0
    while not state.is_terminal:
        if i % every == 0:
            yield state
        actions = state.legal_actions()
        state.apply_action(actions[int(rng.integers(len(actions)))])
        i += 1
    yield state


def fresh(state: BarbuState, seat: int) -> np.ndarray:
    return state.observe(seat)


def test_slices_tile_the_vector_exactly():
    spans = sorted((a, b) for a, b, _ in OFFSETS.values())
    assert spans[0][0] == 0 and spans[-1][1] == OBS_DIM
    assert all(b == c for (_, b), (c, _) in zip(spans, spans[1:]))


def test_decoded_slices_match_the_state():
    for state in game_states(9, every=3):
        seat = max(state.current_player, 0)
        order = [(seat + r) % 4 for r in range(4)]
        p = decode(fresh(state, seat))
        assert card_set(p["hand"]) == state.hands[seat]
        for r, s in enumerate(order):
            assert card_set(p["played"][r]) == state.played[s]
            assert card_set(p["taken"][r]) == state.taken[s]
            assert card_set(p["trick"][r]) == (1 << state.trick[s] if state.trick[s] >= 0 else 0)
            assert p["cards_left"][r] * 13 == pytest.approx(state.hands[s].bit_count())
            assert p["tricks_won"][r] * 13 == pytest.approx(state.tricks_won[s])
            assert p["game_scores"][r] * 100 == pytest.approx(state.scores[s])
            assert card_set(p["contracts_left"][r]) == state.contracts_left[s]
            assert card_set(p["voids"][r]) == state.voids[s]
        assert card_set(p["domino_playable"]) == state.playable
        assert np.flatnonzero(p["phase"]).tolist() == [int(state.phase)]
        assert np.flatnonzero(p["hand_number"]).tolist() == [min(state.hand_number, NUM_HANDS - 1)]
        if state.phase is Phase.GAME_OVER:
            continue
        assert np.flatnonzero(p["declarer"]).tolist() == [(state.declarer - seat) % 4]
        for r, s in enumerate(order):
            for j, t in enumerate(order):
                assert p["doubled"][r, j] == (state.named[s] >> t) & 1
        assert np.flatnonzero(p["to_act"]).tolist() == [(state.current_player - seat) % 4]
        assert np.flatnonzero(p["contract"]).tolist() == ([state.contract] if state.contract >= 0 else [])
        assert np.flatnonzero(p["trump"]).tolist() == ([state.trump] if state.trump >= 0 else [])
        assert np.flatnonzero(p["domino_rank"]).tolist() == ([state.start_rank] if state.start_rank >= 0 else [])
        if state.phase is Phase.TRICKS:
            assert np.flatnonzero(p["leader"]).tolist() == [(state.leader - seat) % 4]
            assert np.flatnonzero(p["trick_number"]).tolist() == [state.trick_number]


def swap_hidden_cards(state: BarbuState, observer: int, rng) -> BarbuState | None:
    """A copy of ``state`` where two other players exchanged one unplayed card each."""
    others = [p for p in range(4) if p != observer and state.hands[p]]
    if len(others) < 2:
        return None
    p, q = rng.choice(others, 2, replace=False)
    cp = [c for c in range(52) if (state.hands[p] >> c) & 1]
    cq = [c for c in range(52) if (state.hands[q] >> c) & 1]
    a, b = int(rng.choice(cp)), int(rng.choice(cq))
    other = state.clone()
    hands = state.hands
    hands[p] ^= (1 << a) | (1 << b)
    hands[q] ^= (1 << a) | (1 << b)
    other.hands = hands
    other.dealt = tuple(h ^ ((1 << a) | (1 << b)) if i in (p, q) else h for i, h in enumerate(state.dealt))
    return other


@pytest.mark.parametrize("seed", [1, 2])
def test_exchanging_other_players_unplayed_cards_leaves_the_observation_unchanged(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for state in game_states(seed, every=5):
        if state.is_terminal:
            break
        observer = int(rng.integers(4))
        other = swap_hidden_cards(state, observer, rng)
        if other is None:
            continue
        np.testing.assert_array_equal(fresh(state, observer), fresh(other, observer))
        checked += 1
    assert checked > 200


def test_every_public_fact_changes_the_observation():
    state = next(s for s in game_states(3) if s.phase is Phase.TRICKS and s.trick_size == 2 and s.trick_number == 3)
    state = state.clone()
    seat = state.current_player
    base = fresh(state, seat)
    left = (seat + 1) % 4

    def set_item(s: BarbuState, name: str, index: int, value: int) -> None:
        values = getattr(s, name)  # a copy: the field is assigned whole
        values[index] = value
        setattr(s, name, values)

    def owe_one_more(s: BarbuState) -> None:
        owed = s.owed
        owed[left][s.declarer] += 1
        s.owed = owed

    changes = {
        "played": lambda s: set_item(s, "played", left, s.played[left] ^ 1),
        "taken": lambda s: set_item(s, "taken", left, s.taken[left] ^ 2),
        "trick": lambda s: set_item(s, "trick", left, (s.trick[left] + 1) % 52),
        "own hand": lambda s: set_item(s, "hands", seat, s.hands[seat] ^ 4),
        "scores": lambda s: set_item(s, "scores", left, s.scores[left] + 10),
        "points": lambda s: set_item(s, "points", left, s.points[left] - 2),
        "tricks won": lambda s: set_item(s, "tricks_won", left, s.tricks_won[left] + 1),
        "doubles": lambda s: set_item(s, "named", left, s.named[left] ^ (1 << seat)),
        "owed": owe_one_more,
        "contracts left": lambda s: set_item(s, "contracts_left", left, s.contracts_left[left] ^ 1),
        "contract": lambda s: setattr(s, "contract", (s.contract + 1) % 5),
        "declarer": lambda s: setattr(s, "declarer", (s.declarer + 1) % 4),
        "leader": lambda s: setattr(s, "leader", (s.leader + 1) % 4),
        "trick number": lambda s: setattr(s, "trick_number", s.trick_number + 1),
        "hand number": lambda s: setattr(s, "hand_number", s.hand_number + 1),
        "to act": lambda s: setattr(s, "current_player", (s.current_player + 1) % 4),
        "left's card count": lambda s: set_item(s, "hands", left, s.hands[left] & (s.hands[left] - 1)),
        "voids": lambda s: set_item(s, "voids", left, s.voids[left] ^ 0b1000),
    }
    for name, change in changes.items():
        other = state.clone()
        change(other)
        assert not np.array_equal(fresh(other, seat), base), name


def test_state_vector_holds_every_hand_and_the_public_view():
    env = barbu_env.env()
    env.reset(seed=4)
    for _ in range(100):
        env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
    game = env.unwrapped.game
    state = env.state()
    assert state.shape == (STATE_DIM,)
    for seat in range(4):
        assert card_set(state[seat * 52 : seat * 52 + 52]) == game.hands[seat]
    np.testing.assert_array_equal(state[4 * 52 :], fresh(game, 0)[52:])


def test_decode_works_on_batches_and_rejects_wrong_sizes():
    batch = np.stack([fresh(s, 0) for s, _ in zip(game_states(1), range(3))])
    parts = decode(batch)
    assert parts["played"].shape == (3, 4, 52)
    with pytest.raises(ValueError):
        decode(np.zeros(OBS_DIM + 1))


def test_decode_keeps_a_torch_tensor_in_the_autograd_graph():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(fresh(next(game_states(1)), 0)).repeat(2, 1).requires_grad_()
    parts = decode(x)
    assert parts["played"].shape == (2, 4, 52) and parts["played"].grad_fn is not None
    parts["hand"].sum().backward()  # the gradient reaches the hand's 52 values, and only them
    assert x.grad[:, :52].eq(1).all() and x.grad[:, 52:].eq(0).all()


def test_the_environment_page_shows_every_slice_at_its_offset():
    from pathlib import Path

    from barbu_env.game.observation import markdown_table

    page = (Path(__file__).resolve().parent.parent / "docs" / "environment.md").read_text()
    assert markdown_table() in page
    assert markdown_table().count("\n| `") == len(OFFSETS) and "| `voids` | 1116 | 16 | 4 x 4 |" in page


def test_the_environment_docstring_documents_every_slice_with_its_shape():
    import re

    from barbu_env.envs import aec
    from barbu_env.game.observation import INFO_DIM, INFO_OFFSETS, INFO_SLICES, SLICES

    rows = re.findall(r"^(\w+)\s+(\d+(?: x \d+)?)\s+\S", aec.__doc__, flags=re.M)
    documented = {name: shape for name, shape in rows if name in OFFSETS}
    assert list(documented) == [name for name, _ in SLICES]
    for name, shape in SLICES:
        assert documented[name] == " x ".join(map(str, shape)), name
    assert f"Box({OBS_DIM},)" in aec.__doc__ and f"Box({STATE_DIM},)" in aec.__doc__
    # The information state's table: the slices after the observation's.
    documented = {name: shape for name, shape in rows if name in INFO_OFFSETS and name not in OFFSETS}
    assert list(documented) == [name for name, _ in INFO_SLICES[len(SLICES) :]]
    for name, shape in INFO_SLICES[len(SLICES) :]:
        assert documented[name] == " x ".join(map(str, shape)), name
    assert f"Box({INFO_DIM},)" in aec.__doc__


def test_a_reading_of_an_observation_names_absolute_seats_and_whole_numbers():
    state = BarbuState.new_game(rng=np.random.default_rng(2), first_declarer=0)
    play_turns(state, [make_agent("random", seed=s) for s in range(4)], hands=1)
    while not (state.phase.name == "TRICKS" and state.trick_size):  # into the second hand's first trick
        state.apply_action(state.legal_actions()[0])
    for seat in range(4):
        r = read(state.observe(seat), seat)
        assert (r.to_act, r.declarer, r.hand_number) == (state.current_player, state.declarer, state.hand_number)
        assert r.hand == state.hands[seat] and list(r.scores) == state.scores
        assert list(r.tricks_won) == state.tricks_won and list(r.points) == state.points
        assert r.leader == state.leader and r.trick[state.leader] == 1 << state.trick[state.leader]
