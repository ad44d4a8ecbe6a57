"""The duplicate tournament (barbu_env/evaluation/tournament/): seating, reproducibility, zero sums,
the fast game loop against the AEC environment, and the statistics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import barbu_env
from barbu_env.agents import Agent, make_agent
from barbu_env.evaluation.records import GameRecord, replay_record
from barbu_env.evaluation.tournament import (
    SEATINGS,
    deal_set,
    evaluate,
    format_table,
    play_game,
    play_games,
    seating,
    t95,
)
from barbu_env.game.rules import Rules, load_rules

FOUR_RANDOM = ["random"] * 4


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """12 games (3 deal sets) of heuristic against three randoms, every game recorded."""
    records = tmp_path_factory.mktemp("records")
    result = evaluate(["heuristic", "random", "random", "random"], games=12, seed=11, workers=1, records_dir=records)
    return result, records


# ---------------------------------------------------------------------- seating


def test_each_agent_sits_in_each_seat_once_per_deal_set(small_run):
    result, _ = small_run
    assert result.games == 12 and result.deal_sets == 3
    by_set: dict[int, list[dict]] = {}
    for g in result.game_table:
        by_set.setdefault(g["deal_set"], []).append(g)
    assert sorted(by_set) == [0, 1, 2]
    for games in by_set.values():
        assert sorted(g["seating"] for g in games) == [0, 1, 2, 3]
        assert len({g["first_declarer"] for g in games}) == 1  # one deal set: one first declarer
        for label in result.labels:
            seats = sorted(g["seats"].index(label) for g in games)
            assert seats == [0, 1, 2, 3], label
        for g in games:
            assert sorted(g["seats"]) == sorted(result.labels)  # all four agents at every table


def test_the_four_games_of_a_deal_set_share_its_deals(small_run):
    result, records = small_run
    files = sorted(records.glob("game_*.json"))
    assert len(files) == 12
    first_declarer, deals = deal_set(11, 1)
    for rotation in range(SEATINGS):
        record = GameRecord.load(records / f"game_{4 + rotation:05d}.json")
        assert record.first_declarer == first_declarer
        assert record.deals == [[" ".join(_card_texts(hand)) for hand in deal] for deal in deals]
        assert record.metadata["deal_set"] == 1 and record.metadata["seating"] == rotation
        assert record.agents == [result.labels[k] for k in seating(rotation)]


def _card_texts(cards):
    from barbu_env.game.cards import card_text

    return [card_text(c) for c in sorted(cards)]


def test_games_are_rounded_up_to_whole_deal_sets():
    result = evaluate(FOUR_RANDOM, games=5, seed=0, workers=1)
    assert (result.games, result.deal_sets) == (8, 2)


# ---------------------------------------------------------------------- reproducibility


def test_same_seed_same_results_whatever_the_workers():
    one = evaluate(FOUR_RANDOM, games=8, seed=4, workers=1)
    two = evaluate(FOUR_RANDOM, games=8, seed=4, workers=2)
    assert one.to_json(timing=False) == two.to_json(timing=False)
    assert two.run["workers"] == 2 and one.run["workers"] == 1
    other = evaluate(FOUR_RANDOM, games=8, seed=5, workers=1)
    assert other.to_json(timing=False) != one.to_json(timing=False)


def test_json_holds_the_tables(small_run, tmp_path):
    result, _ = small_run
    path = tmp_path / "r.json"
    result.to_json(path)
    doc = json.loads(path.read_text())
    assert doc["tournament"]["agents"] == ["heuristic", "random", "random", "random"]
    assert doc["tournament"]["rules"] == Rules().to_dict()
    assert [e["label"] for e in doc["entries"]] == ["heuristic", "random"]
    assert doc["entries"][1]["instances"] == [1, 2, 3]
    assert set(doc["entries"][0]["per_contract"]) == {
        "no_tricks",
        "no_hearts",
        "no_queens",
        "no_king_of_hearts",
        "no_last_two",
        "trumps",
        "domino",
    }
    assert [i["label"] for i in doc["instances"]] == ["heuristic", "random#1", "random#2", "random#3"]
    assert [(h["a"], h["b"]) for h in doc["head_to_head"]] == [("heuristic", "random")]
    assert len(doc["head_to_head_instances"]) == 6
    assert len(doc["games"]) == 12
    assert doc["run"]["records_saved"] == 12


# ---------------------------------------------------------------------- sums and statistics


def test_scores_of_every_game_sum_to_zero_under_standard_rules(small_run):
    result, _ = small_run
    for g in result.game_table:
        assert sum(g["scores"]) == 0
    # Entries' mean scores, weighted by instances, sum to zero too.
    assert sum(e.score.mean * len(e.instances) for e in result.entries) == pytest.approx(0, abs=1e-9)


def test_mean_and_standard_error_are_taken_over_deal_sets(small_run):
    result, _ = small_run
    games = result.game_table
    for entry in result.entries:
        per_set = []
        for s in range(result.deal_sets):
            vals = [
                g["scores"][g["seats"].index(result.labels[k])]
                for g in games
                if g["deal_set"] == s
                for k in entry.instances
            ]
            per_set.append(np.mean(vals))
        assert entry.score.mean == pytest.approx(np.mean(per_set))
        se = np.std(per_set, ddof=1) / math.sqrt(len(per_set))
        assert entry.score.se == pytest.approx(se)
        half = t95(len(per_set) - 1) * se
        assert entry.score.ci95 == pytest.approx((np.mean(per_set) - half, np.mean(per_set) + half))
    h2h = result.head_to_head[0]
    assert h2h.difference.mean == pytest.approx(result.entries[0].score.mean - result.entries[1].score.mean)


def test_per_contract_means_match_the_records(small_run):
    result, records = small_run
    heuristic = result.entries[0]
    declared, defended = {}, {}
    for path in sorted(records.glob("game_*.json")):
        record = GameRecord.load(path)
        seat = record.agents.index("heuristic")
        for hand in record.hands:
            side = declared if hand["declarer"] == seat else defended
            side.setdefault(hand["contract"], []).append(hand["settled"][seat])
    for contract, scores in declared.items():
        assert len(scores) == 12  # one hand of each contract per game as declarer
        assert heuristic.declarer[contract].mean == pytest.approx(np.mean(scores))
    for contract, scores in defended.items():
        assert len(scores) == 36
        assert heuristic.defender[contract].mean == pytest.approx(np.mean(scores))


def test_format_table_names_every_entry(small_run):
    text = format_table(small_run[0])
    for word in ("heuristic", "random#3", "declarer", "defender", "Doubling", "heuristic vs random", "95% CI"):
        assert word in text


def test_other_rules_reach_the_games():
    result = evaluate(FOUR_RANDOM, games=4, seed=2, rules="rotating", workers=1)
    assert result.rules == load_rules("rotating")
    assert result.to_dict()["tournament"]["rules_name"] == "rotating"


# ---------------------------------------------------------------------- the fast loop


class Recorder:
    """Wraps an agent and notes every observation it is given and its answer."""

    def __init__(self, agent, log):
        self.agent, self.log, self.name = agent, log, agent.name

    def act(self, observation, agent=None):
        action = self.agent.act(observation, agent)
        self.log.append((agent, observation["observation"].tobytes(), observation["action_mask"].tobytes(), action))
        return action


def test_fast_loop_gives_agents_what_the_aec_environment_gives():
    specs = ["heuristic", "random", "heuristic", "random"]
    first_declarer, deals = deal_set(7, 0)

    fast_log: list = []
    fast_agents = [Recorder(make_agent(s, seed=10 + i), fast_log) for i, s in enumerate(specs)]
    played = play_game(fast_agents, Rules(), first_declarer, deals)

    env_log: list = []
    env_agents = [Recorder(make_agent(s, seed=10 + i), env_log) for i, s in enumerate(specs)]
    env = barbu_env.env()
    env.reset(options={"deals": deals, "first_declarer": first_declarer})
    results, totals = [], dict.fromkeys(env.possible_agents, 0)
    for name in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[name] += reward
        if "hand_result" in info and (not results or results[-1]["hand"] != info["hand_result"]["hand"]):
            results.append(info["hand_result"])
        env.step(None if term or trunc else env_agents[int(name[-1])].act(obs, name))

    assert len(fast_log) == len(env_log) > 1000
    assert fast_log == env_log  # same observations, masks, agent names and actions, in order
    assert [r.to_dict() for r in played.state.results] == results
    assert played.state.scores == [totals[f"player_{p}"] for p in range(4)]


class CountingGroup(Agent):
    """Instances sharing a batch key (random underneath) that note the size of every call."""

    name = "counting"
    batch_key = "counting"

    def __init__(self, seed, calls):
        self.agent, self.calls = make_agent("random", seed=seed), calls

    def act(self, observation, agent=None):
        raise AssertionError("instances sharing a batch key are asked together through act_batch")

    def act_batch(self, observations, masks, instances=None):
        instances = instances or [self] * len(observations)
        instances[0].calls.append(len(instances))
        return np.array(
            [a.agent.act({"observation": o, "action_mask": m}) for a, o, m in zip(instances, observations, masks)],
            dtype=np.int64,
        )


def test_a_group_is_asked_once_per_step_for_every_live_game():
    calls: list[int] = []
    sets = [deal_set(5, i) for i in range(6)]
    agent_sets = [[CountingGroup(10 * g + s, calls) for s in range(4)] for g in range(len(sets))]
    played = play_games(agent_sets, Rules(), [f for f, _ in sets], [d for _, d in sets])
    lengths = [len(p.state.history) for p in played]
    assert len(calls) == max(lengths)  # one call per step
    assert calls[0] == len(sets)  # with every live game's row in it
    assert calls == [sum(n > step for n in lengths) for step in range(max(lengths))]


def test_batched_play_gives_the_games_that_act_alone_gives():
    # The heuristic and random agents answer by rows (act_batch); wrapped in
    # a Recorder they answer through act, one decision at a time. The games are the same.
    specs = ["heuristic", "random", "random", "heuristic"]
    sets = [deal_set(9, i) for i in range(3)]
    batched = play_games(
        [[make_agent(s, seed=7 * g + k) for k, s in enumerate(specs)] for g in range(3)],
        Rules(),
        [f for f, _ in sets],
        [d for _, d in sets],
    )
    log: list = []
    alone = play_games(
        [[Recorder(make_agent(s, seed=7 * g + k), log) for k, s in enumerate(specs)] for g in range(3)],
        Rules(),
        [f for f, _ in sets],
        [d for _, d in sets],
    )
    assert len(log) == sum(len(p.state.history) for p in alone) > 3000
    for b, a in zip(batched, alone):
        assert b.state.history == a.state.history and b.state.scores == a.state.scores
        assert np.array_equal(b.doubles, a.doubles)


def test_doubles_are_noted_as_doubles_and_redoubles():
    first_declarer, deals = deal_set(3, 0)
    played = play_game([make_agent("random", seed=i) for i in range(4)], Rules(), first_declarer, deals)
    for result, doubles in zip(played.state.results, played.doubles):
        levels = np.array(result.levels)
        named = (doubles > 0).astype(int)
        assert (named + named.T == levels).all()  # a pair's level counts who named whom
        both = (doubles > 0) & (doubles.T > 0)
        assert ((doubles == 2) == both & (doubles.T == 1)).all()  # exactly one of a redoubled pair redoubled


def test_records_written_by_a_tournament_replay(small_run):
    result, records = small_run
    record = GameRecord.load(records / "game_00006.json")
    _, scores = replay_record(record)
    game = result.game_table[6]
    assert scores == game["scores"] and record.agents == game["seats"]


class AlwaysPass:
    name = "always_pass"

    def act(self, observation, agent=None):
        return 84  # pass: legal only in Domino with no playable card


@pytest.mark.parametrize("workers", [1, 2])
def test_an_illegal_action_names_the_agent(workers, monkeypatch):
    import multiprocessing

    from barbu_env.agents import registry

    if workers > 1 and multiprocessing.get_start_method() != "fork":
        pytest.skip("the patched registry reaches worker processes only when they are forked")
    monkeypatch.setitem(registry._FACTORIES, "always_pass", lambda seed=0, **_: AlwaysPass())
    with pytest.raises(ValueError, match="agent 'always_pass' in seat"):
        evaluate(["random", "always_pass", "random", "random"], games=8, workers=workers)
