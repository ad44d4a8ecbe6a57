"""Bad input gives one clear line and a non-zero exit, never a traceback: the ``barbu``
command with missing files, wrong values and foreign files, and the record and rules
loaders under generated malformed input (hypothesis)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barbu_env.cli.main import main
from barbu_env.evaluation.records import GameRecord, RecordError, replay_record
from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import Rules, RulesError, load_rules

# ---------------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    state = BarbuState.new_game(rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    while not state.is_terminal:
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    good = GameRecord.from_state(state).to_dict()
    out = {"record": d / "good.json"}
    out["record"].write_text(json.dumps(good))
    (out := out | {"version": d / "v9.json", "fields": d / "fields.json", "typed": d / "typed.json"})
    out["version"].write_text(json.dumps(good | {"version": 9}))
    out["fields"].write_text(json.dumps({k: v for k, v in good.items() if k != "actions"}))
    out["typed"].write_text(json.dumps(good | {"final_scores": "all zero"}))
    out["not_ckpt"] = d / "weights.pt"
    out["not_ckpt"].write_bytes(b"these are not weights\n")
    for name, text in {
        "not_yaml": "seed: [1, 2\n",
    }.items():
        out[name] = d / f"{name}.yaml"
        out[name].write_text(text)
    return out


def _agents(spec: str) -> list[str]:
    return ["eval", "--agents", spec, "--games", "4", "--workers", "1", "--no-progress"]


BAD_COMMANDS = {
    "missing config": (lambda f: ["train", "--config", "missing.yaml"], "missing.yaml"),
    "config not yaml": (lambda f: ["train", "--config", str(f["not_yaml"])], "not valid YAML"),
    "resume not a checkpoint": (
        lambda f: ["train", "--resume", str(f["not_ckpt"]), "--run-dir", str(f["not_ckpt"].parent)],
        "not a barbu checkpoint",
    ),
    "replay missing": (lambda f: ["replay", "missing.json"], "missing.json"),
    "record version": (lambda f: ["replay", str(f["version"])], "version 9 is not supported"),
    "record fields": (lambda f: ["replay", str(f["fields"])], "lacks ['actions']"),
    "record field type": (lambda f: ["replay", str(f["typed"])], "'final_scores' must be a list of 4 integers"),
    "eval bogus rules": (
        lambda f: [*_agents("random,random,random,random"), "--rules", "bogus"],
        "unknown rules preset 'bogus'",
    ),
    "eval not a checkpoint": (lambda f: _agents(f"{f['not_ckpt']},random,random,random"), "not a barbu checkpoint"),
    "eval unknown agent": (lambda f: _agents("nobody,random,random,random"), "nobody"),
}


@pytest.mark.parametrize("case", BAD_COMMANDS)
def test_bad_input_is_one_line_and_a_non_zero_exit(case, files, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, expected = BAD_COMMANDS[case]
    assert main(argv(files)) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert expected in err and err.startswith(f"barbu {argv(files)[0]}: error: "), err
    assert not (tmp_path / "runs").exists()  # a run that cannot start leaves no folder behind


@pytest.mark.parametrize("hand", ["0", "x"])
def test_replay_refuses_a_hand_that_is_no_positive_integer(hand, files, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["replay", str(files["record"]), "--hand", hand])
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("barbu replay: error: argument --hand: must be a positive integer"), line


# ---------------------------------------------------------------------- the loaders, fuzzed

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["format", "version", "rules", "first_declarer", "deals", "actions", "hands", "final_scores", "agents"]


@pytest.fixture(scope="module")
def good_record(files) -> dict:
    return json.loads(files["record"].read_text())


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


SWITCHES = [f for f in Rules.__dataclass_fields__]


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(SWITCHES) | JSON.filter(lambda k: isinstance(k, (str, int))), JSON, max_size=4))
def test_a_malformed_rules_mapping_is_a_rules_error_and_nothing_else(mapping):
    try:
        rules = load_rules(mapping)
    except RulesError:
        return
    assert set(mapping) <= set(SWITCHES) and Rules.from_mapping(rules.to_dict()) == rules


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


def test_a_missing_checkpoint_file_is_named_as_missing():
    import gymnasium

    for spec in ("missing.pt", "runs/nowhere/best.pt", Path("missing.pt")):
        with pytest.raises(ValueError, match="no such file"):
            gymnasium.make("Barbu-v1", opponents=spec)
