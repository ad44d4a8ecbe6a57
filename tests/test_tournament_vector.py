"""The duplicate tournament on the batched engine (``VectorBarbu``) plays, for a seed,
exactly the games the lockstep loop it replaced played (``tests/lockstep_reference.py``):
the same per-game arrays (scores, each hand's declarer, contract, raw and settled scores,
doubles), the same game records, the same tables, for several lineups and presets and
for one or two worker processes."""

from __future__ import annotations

import json
import multiprocessing

import lockstep_reference
import numpy as np
import pytest

from barbu_env.agents import make_agent, registry
from barbu_env.evaluation import tournament
from barbu_env.evaluation.tournament import GameData, _Job, agent_labels, agent_seed, evaluate
from barbu_env.game.rules import load_rules, preset_names

HEURISTICS = ["heuristic", "heuristic", "heuristic", "random"]


class ActOnly:
    """A random agent that answers only through ``act`` (no ``act_batch``, no group), as a
    user's agent or a human seat does."""

    def __init__(self, seed: int = 0, **_):
        self.agent = make_agent("random", seed=seed)
        self.name = "act_only"

    def act(self, observation, agent=None):
        assert observation["action_mask"].dtype == np.int8 and observation["observation"].dtype == np.float32
        assert agent in ("player_0", "player_1", "player_2", "player_3")
        return self.agent.act(observation, agent)


def _job(specs, seed, rules, sets, record_games):
    _, labels = agent_labels(specs)
    return _Job(tuple(specs), tuple(labels), load_rules(rules), seed, 0, sets, record_games)


def _assert_same_job(job):
    new_data, new_records = tournament._play_job(job)
    ref_data, ref_records = lockstep_reference.play_job(job)
    for name in GameData.__dataclass_fields__:
        new, ref = getattr(new_data, name), getattr(ref_data, name)
        assert new.dtype == ref.dtype and new.shape == ref.shape, name
        assert np.array_equal(new, ref), name
    assert [i for i, _ in new_records] == [i for i, _ in ref_records]
    assert [r.to_dict() for _, r in new_records] == [r.to_dict() for _, r in ref_records]
    return new_data


@pytest.mark.parametrize("rules", preset_names())
@pytest.mark.parametrize(
    "specs",
    [
        ["random"] * 4,
        HEURISTICS,
        ["heuristic-cautious", "heuristic", "random", "heuristic-cautious"],
    ],
)
def test_a_job_plays_the_games_of_the_lockstep_loop(specs, rules):
    data = _assert_same_job(_job(specs, seed=5, rules=rules, sets=2, record_games=5))
    assert (data.doubles > 0).any() and (data.doubles == 2).any()  # doubles and redoubles were compared


def test_an_agent_answering_through_act_plays_the_games_of_the_lockstep_loop(monkeypatch):
    monkeypatch.setitem(registry._FACTORIES, "act_only", ActOnly)
    _assert_same_job(_job(["act_only", "heuristic", "act_only", "random"], seed=2, rules=None, sets=2, record_games=8))


def test_the_shipped_policy_plays_the_games_of_the_lockstep_loop():
    pytest.importorskip("torch")
    _assert_same_job(_job(["ppo", "heuristic", "heuristic", "random"], seed=4, rules=None, sets=1, record_games=4))


def test_pimc_plays_the_games_of_the_lockstep_loop():
    _assert_same_job(_job(["pimc:worlds=4", "heuristic", "random", "heuristic"], 8, "classic", sets=1, record_games=2))


def _run(agents, games, seed, rules, workers, records_dir, play_job=None, record_games=None):
    """A tournament's JSON tables (no timing) and its record files, read back."""
    with pytest.MonkeyPatch.context() as patch:
        if play_job is not None:
            patch.setattr(tournament, "_play_job", play_job)
        result = evaluate(
            agents, games, seed=seed, rules=rules, workers=workers, records_dir=records_dir, record_games=record_games
        )
    records = {p.name: json.loads(p.read_text()) for p in sorted(records_dir.glob("*.json"))}
    return result.to_dict(timing=False), records


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "agents, games, rules",
    [(HEURISTICS, 20, "standard"), (["random", "heuristic-cautious", "random", "heuristic"], 12, "rotating")],
)
def test_a_tournament_gives_the_tables_and_records_of_the_lockstep_loop(agents, games, rules, workers, tmp_path):
    new = _run(agents, games, 13, rules, workers, tmp_path / "new", record_games=6)
    ref = _run(agents, games, 13, rules, 1, tmp_path / "ref", lockstep_reference.play_job, 6)
    assert len(new[1]) == 6 and new[0]["tournament"]["games"] == games
    assert new == ref


def test_the_comparison_notices_an_agent_given_another_seats_seed(tmp_path):
    # The reference with the seeds of seats 1 and 2 swapped: the same agents, other draws.
    def swapped(seed, set_index, rotation, seat):
        return agent_seed(seed, set_index, rotation, {1: 2, 2: 1}.get(seat, seat))

    def play_job(job):
        return lockstep_reference.play_job(job, seed_of=swapped)

    new = _run(["random"] * 4, 8, 1, None, 1, tmp_path / "new", record_games=1)
    ref = _run(["random"] * 4, 8, 1, None, 1, tmp_path / "ref", play_job, 1)
    assert new[0]["tournament"] == ref[0]["tournament"] and new[0]["games"] != ref[0]["games"]
    assert new[1] != ref[1]


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the registry reaches workers by fork")
def test_an_act_agent_plays_in_worker_processes(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._FACTORIES, "act_only", ActOnly)
    agents = ["act_only", "heuristic", "random", "heuristic"]
    new = _run(agents, 8, 3, None, 2, tmp_path / "new")
    ref = _run(agents, 8, 3, None, 1, tmp_path / "ref", lockstep_reference.play_job)
    assert new == ref
