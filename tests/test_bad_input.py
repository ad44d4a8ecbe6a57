"""The record loader under generated malformed input (hypothesis) raises its own error
and nothing else, and ``Barbu-v1`` refuses what a user mistypes (the command
line's one-line refusals: tests/test_cli_hardening.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barbu_env.evaluation.records import GameRecord, RecordError, replay_record
from barbu_env.game.engine import BarbuState

# ---------------------------------------------------------------------- the loaders, fuzzed

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["format", "version", "rules", "first_declarer", "deals", "actions", "hands", "final_scores", "agents"]


@pytest.fixture(scope="module")
def good_record() -> dict:
    """The record of a whole game of random moves."""
    state = BarbuState.new_game(rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    while not state.is_terminal:
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    return GameRecord.from_state(state).to_dict()


def _mutate(data, path: list, value, delete: bool):
    """``data`` with the item at ``path`` (keys and indices, clipped to what exists)
    replaced by ``value`` or deleted."""
    out = copy.deepcopy(data)
    node, key = out, None
    for step in path:
        child = node if key is None else node[key]
        if isinstance(child, dict) and child:
            node, key = child, sorted(child)[step % len(child)]
        elif isinstance(child, list) and child:
            node, key = child, step % len(child)
        else:
            break
    if key is None:
        return out
    if delete:
        del node[key]
    else:
        node[key] = value
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(FIELDS),
    path=st.lists(st.integers(0, 10_000), max_size=3),
    value=JSON,
    delete=st.booleans(),
)
def test_a_malformed_record_is_a_record_error_and_nothing_else(good_record, field, path, value, delete):
    data = _mutate({field: good_record[field]}, [0, *path], value, delete)
    malformed = {k: v for k, v in good_record.items() if k != field} | data
    try:
        replay_record(GameRecord.from_dict(malformed))
    except RecordError:
        return
    # the mutation left a valid game (a value replaced by an equal one, an agent's name, ...)
    assert malformed["actions"] == good_record["actions"] and malformed["hands"] == good_record["hands"]


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_a_file_that_is_not_a_record_is_a_value_error(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("blob") / "x.json"
    path.write_bytes(blob)
    with pytest.raises(ValueError):
        GameRecord.load(path)


# ---------------------------------------------------------------------- Barbu-v1: what a stranger mistypes


def test_barbu_v1_refuses_a_misspelt_reset_option_and_an_action_outside_its_space():
    import gymnasium

    with pytest.raises(ValueError, match=r"first_declare.*the options are"):
        gymnasium.make("Barbu-v1", opponents="random").reset(seed=0, options={"first_declare": 2})
    for bad in (-1, 85, 3.5):
        env = gymnasium.make("Barbu-v1", opponents="random", episode="hand")
        env.reset(seed=0, options={"first_declarer": 2})
        with pytest.raises(ValueError, match="not in Discrete"):
            env.step(bad)
    env = gymnasium.make("Barbu-v1", opponents="random", episode="hand")
    _, info = env.reset(seed=0)
    off_mask = int(np.flatnonzero(info["action_mask"] == 0)[0])
    assert env.step(off_mask)[4]["illegal_action"]  # in the space, off the mask: a random legal one
