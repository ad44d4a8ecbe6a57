"""Game records (barbu_env/evaluation/records.py): save, load, replay exactly, refuse tampering,
render hand by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from barbu_env.evaluation.records import GameRecord, RecordError, render_record, replay_record
from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import load_rules

GOLDEN = sorted((Path(__file__).parent / "data" / "golden").glob("*.json"))


def random_game(seed: int, rules=None, stop_after: int | None = None) -> BarbuState:
    state = BarbuState.new_game(rules, rng=np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1000)
    while not state.is_terminal and (stop_after is None or len(state.history) < stop_after):
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    return state


@pytest.fixture(scope="module")
def record() -> GameRecord:
    return GameRecord.from_state(random_game(1), agents=["a", "b", "c", "d"], metadata={"note": "test"})


def test_a_record_round_trips_through_a_file(record, tmp_path):
    path = record.save(tmp_path / "game.json")
    loaded = GameRecord.load(path)
    assert loaded == record
    assert json.loads(path.read_text())["format"] == "barbu-game-record"
    hands, scores = replay_record(loaded)
    assert hands == record.hands
    assert scores == record.final_scores
    assert len(hands) == 28 and len(loaded.actions) > 1000


def test_a_golden_game_recorded_replays_to_the_golden_results(tmp_path):
    golden = json.loads(GOLDEN[0].read_text())
    state = BarbuState.new_game("standard", first_declarer=golden["first_declarer"], deals=golden["deals"])
    for decision in golden["decisions"]:
        state.apply_action(decision["action"])
    record = GameRecord.load(GameRecord.from_state(state).save(tmp_path / "golden.json"))
    hands, scores = replay_record(record)
    assert scores == golden["final_scores"]
    for replayed, expected in zip(hands, golden["hands"], strict=True):
        assert {k: replayed[k] for k in expected} == expected


@pytest.mark.parametrize("preset", ["classic", "declarer_only"])
def test_records_carry_their_rules(preset, tmp_path):
    rec = GameRecord.from_state(random_game(5, rules=preset))
    loaded = GameRecord.load(rec.save(tmp_path / "g.json"))
    assert loaded.rules_obj() == load_rules(preset)
    assert replay_record(loaded)[1] == rec.final_scores


def test_an_unfinished_game_replays_as_far_as_it_went():
    state = random_game(2, stop_after=300)
    rec = GameRecord.from_state(state)
    assert len(rec.deals) == len(rec.hands) + 1  # the hand under way is dealt too
    hands, scores = replay_record(rec)
    assert hands == rec.hands and scores == state.scores


def tampered(record: GameRecord, change) -> GameRecord:
    data = copy.deepcopy(record.to_dict())
    change(data)
    return GameRecord.from_dict(data)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["hands"][3]["settled"].__setitem__(0, d["hands"][3]["settled"][0] + 1), "hand 4 differs"),
        (lambda d: d["hands"][0].__setitem__("declarer", 9), "hand 1 differs"),
        (lambda d: d["final_scores"].__setitem__(2, 999), "final scores"),
        (lambda d: d["actions"].__setitem__(0, 84), "not legal"),
        (lambda d: d["actions"].append(52), "after the end of the game"),
        (lambda d: d.__setitem__("actions", d["actions"][:-30]), "finish 27 hands"),
        (lambda d: d["deals"][5].reverse(), "hand 6"),
        (lambda d: d["rules"].__setitem__("trumps_points", 6), "differs"),
        (lambda d: d["rules"].__setitem__("no_such_rule", 1), "unknown rule"),
        (lambda d: d["deals"][0].__setitem__(0, "AS AS"), "deals"),
        (lambda d: d["hands"].__setitem__(0, 5), "hand 1 differs"),
        (lambda d: d.__setitem__("first_declarer", "P0"), "first declarer"),
    ],
)
def test_a_tampered_record_raises(record, change, message):
    bad = tampered(record, change)
    with pytest.raises(RecordError, match=message):
        replay_record(bad)


def test_not_a_record_raises(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(RecordError, match="not a Barbu game record"):
        GameRecord.load(path)
    path.write_text("{")
    with pytest.raises(RecordError, match="not JSON"):
        GameRecord.load(path)
    path.write_text(GameRecord.from_state(random_game(0, stop_after=10)).to_json().replace('"final_scores"', '"x"'))
    with pytest.raises(RecordError, match="lacks"):
        GameRecord.load(path)
    with pytest.raises(RecordError, match="'final_scores' must be a list of 4 integers"):
        GameRecord.from_dict({**json.loads(path.read_text()), "final_scores": "all zero"})


def test_render_shows_every_hand(record):
    text = render_record(record)
    assert text.count("\nHand ") == 28
    assert "Hand 1/28 - declarer P" in text and "Doubles:" in text
    assert "Trick 13" in text or "Trick 12" in text  # at least one trick hand played out
    assert "Domino:" in text and "Out: " in text
    assert text.count("Settled") == 28
    assert text.rstrip().endswith("  ".join(f"P{p} {v:+4d}" for p, v in enumerate(record.final_scores)))
    one = render_record(record, hands=[2])
    assert one.count("\nHand ") == 1 and "Hand 2/28" in one


def test_render_lists_each_trick_leader_first_with_its_winner(record):
    first_trick_hand = next(h for h in record.hands if h["contract"] != "domino")
    block = render_record(record, hands=[first_trick_hand["hand"] + 1])
    tricks = [line for line in block.splitlines() if line.strip().startswith("Trick")]
    assert tricks[0].split()[2] == f"P{first_trick_hand['declarer']}"  # the declarer leads trick 1
    winners = [int(line.split("-> P")[1].split()[0]) for line in tricks]
    assert [winners.count(p) for p in range(4)] == first_trick_hand["tricks"]
