"""The heuristic (numba kernels, through ``HeuristicAgent.act_batch`` and ``act``) picks
exactly the action of the plain-Python oracle (``tests/heuristic_oracle.py``) on every
decision: seeded full games of heuristic and random players under every rules preset
and under other switches and point values, every decision (observation, mask) compared
row by row."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from heuristic_oracle import OracleHeuristic

import barbu_env
from barbu_env.agents import act_rows
from barbu_env.agents.heuristic import HeuristicAgent
from barbu_env.agents.random_agent import RandomAgent
from barbu_env.game.actions import action_text
from barbu_env.game.engine import CONTRACT_NAMES, Phase
from barbu_env.game.observation import decode
from barbu_env.game.render import hand_by_suit
from barbu_env.game.rules import load_rules, preset_names
from barbu_env.game.vector import VectorBarbu

#: Rules beyond the presets: other switches and point values (odd ones included: equal
#: heart and A♥ points, zero and positive penalties, no doubling obligation).
VARIANTS = {
    "points": {
        "no_tricks_points": -3,
        "no_hearts_points": -1,
        "no_hearts_ace_points": -9,
        "no_queens_points": -5,
        "barbu_points": -30,
        "no_last_two_points": [-5, -25],
        "trumps_points": 7,
        "domino_scores": [60, 30, 0, -30],
        "end_no_queens_early": False,
        "end_barbu_early": False,
        "trumps_must_ruff": False,
    },
    "switches": {
        "rotation": "every_hand",
        "doubling_targets": "declarer_only",
        "min_declarer_doubles": 7,
        "redouble_pass": True,
        "barbu_king_first_chance": True,
        "end_no_hearts_early": True,
        "trumps_must_overtrump": False,
        "no_hearts_ace_points": -2,
    },
    "odd_points": {
        "no_queens_points": 0,
        "barbu_points": 4,
        "no_last_two_points": [0, -40],
        "domino_scores": [0, 0, 0, 0],
        "min_declarer_doubles": 0,
        "redouble_pass": True,
    },
}
RULE_SETS = [(name, name) for name in preset_names()] + [(name, spec) for name, spec in VARIANTS.items()]

#: Which seats the heuristic plays (the others play random), by game slot.
LINEUPS = (
    (True, True, True, True),
    (True, False, False, False),
    (False, True, True, False),
    (True, False, True, False),
    (False, False, False, True),
    (True, True, True, False),
)


def collect(rules, seed: int, num_games: int, games_each: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Every decision (observation, mask) of ``num_games`` slots of ``VectorBarbu`` played
    until each slot has finished ``games_each`` games: the heuristic (the oracle, so that
    the games do not depend on the kernels) in the seats of the slot's lineup, random
    players in the others."""
    rules = load_rules(rules)
    reference = OracleHeuristic(rules=rules)
    rnd = RandomAgent(seed)
    venv = VectorBarbu(num_games, rules=rules, seed=seed)
    obs, masks, seat = venv.reset()
    finished = np.zeros(num_games, dtype=np.int64)
    live = np.ones(num_games, dtype=bool)  # slots whose decisions are still collected
    all_obs, all_masks = [], []
    while live.any():
        all_obs.append(obs[live])
        all_masks.append(masks[live])
        actions = rnd.act_batch(obs, masks)
        for g in np.flatnonzero(live):
            if LINEUPS[g % len(LINEUPS)][seat[g]]:
                actions[g] = reference.act({"observation": obs[g], "action_mask": masks[g]})
        obs, masks, seat, _, dones, _ = venv.step(actions)
        finished += dones
        live &= finished < games_each
    return np.concatenate(all_obs), np.concatenate(all_masks)


def describe(obs: np.ndarray, mask: np.ndarray) -> str:
    """The decision an observation is, in words (for a mismatch report)."""
    d = decode(obs)

    def one(name: str) -> int:
        hot = np.flatnonzero(d[name] > 0.5)
        return int(hot[0]) if len(hot) else -1

    def cards(row: np.ndarray) -> int:
        return sum(1 << int(c) for c in np.flatnonzero(row > 0.5))

    contract = one("contract")
    lines = [
        (
            f"phase {Phase(one('phase')).name}, contract {CONTRACT_NAMES[contract] if contract >= 0 else '-'}, "
            f"trump {one('trump')}, domino rank {one('domino_rank')}, declarer (relative) {one('declarer')}, "
            f"leader {one('leader')}, trick {one('trick_number')}"
        ),
        f"hand: {hand_by_suit(cards(d['hand']))}",
        "trick: "
        + ", ".join(f"seat {s}: {hand_by_suit(cards(d['trick'][s]))}" for s in range(4) if d["trick"][s].any()),
        "played: " + " | ".join(hand_by_suit(cards(d["played"][s])) for s in range(4)),
        f"cards left: {np.round(d['cards_left'] * 13).astype(int).tolist()}, "
        f"doubled: {d['doubled'].astype(int).tolist()}",
        "legal: " + ", ".join(f"{a} ({action_text(a)})" for a in np.flatnonzero(mask)),
    ]
    return "\n".join(lines)


def assert_same_actions(agent: HeuristicAgent, obs: np.ndarray, masks: np.ndarray) -> None:
    """``agent.act_batch`` and ``agent.act`` choose the oracle's action on every row; the
    first difference is described."""
    oracle = OracleHeuristic(rules=agent.rules)
    batch = agent.act_batch(obs, masks)
    assert batch.dtype == np.int64 and batch.shape == (len(obs),)
    for k, (o, m) in enumerate(zip(obs, masks)):
        observation = {"observation": o, "action_mask": m}
        expected = oracle.act(observation)
        for how, action in (("act_batch", int(batch[k])), ("act", agent.act(observation))):
            if action != expected:
                raise AssertionError(
                    f"decision {k} of {len(obs)}: the oracle chose {expected} ({action_text(expected)}), {how} "
                    f"{action} ({action_text(action) if 0 <= action < 85 else '?'})\n{describe(o, m)}"
                )


def coverage(obs: np.ndarray, masks: np.ndarray) -> Counter:
    """Non-forced decisions by phase, and trick/Domino decisions by contract."""
    d = decode(obs)
    choice = masks.sum(axis=1) > 1
    phase = d["phase"].argmax(axis=1)
    contract = d["contract"].argmax(axis=1)
    counts = Counter(f"phase {Phase(p).name}" for p in phase[choice])
    counts.update(CONTRACT_NAMES[c] for c in contract[choice & (phase >= Phase.TRICKS)])
    return counts


def check_rule_set(rules, seed: int, num_games: int, games_each: int = 1) -> int:
    obs, masks = collect(rules, seed, num_games, games_each)
    counts = coverage(obs, masks)
    for p in (Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK, Phase.DOUBLE, Phase.TRICKS, Phase.DOMINO):
        assert counts[f"phase {p.name}"] > 0, counts
    for name in CONTRACT_NAMES:
        assert counts[name] > 0, counts
    assert_same_actions(HeuristicAgent(seed=seed, rules=rules), obs, masks)
    return len(obs)


# ---------------------------------------------------------------- the kernels equal the oracle


@pytest.mark.parametrize(
    "name,rules",
    [p if p[0] in ("standard", "classic") else pytest.param(*p, marks=pytest.mark.slow) for p in RULE_SETS],
    ids=[name for name, _ in RULE_SETS],
)
def test_kernels_equal_the_oracle_on_every_decision_of_full_games(name, rules):
    # 3 slots, each to the end of a whole game (about 1,650 decisions): ~5k decisions per
    # rule set, ~35k in all.
    n = check_rule_set(rules, seed=sum(map(ord, name)), num_games=3)
    assert n > 3 * 1000


@pytest.mark.slow
@pytest.mark.parametrize("name,rules", RULE_SETS, ids=[name for name, _ in RULE_SETS])
def test_kernels_equal_the_oracle_on_many_more_games(name, rules):
    # 24 slots x 2 games per rule set: ~80k decisions per rule set, ~550k in all.
    n = check_rule_set(rules, seed=1000 + sum(map(ord, name)), num_games=24, games_each=2)
    assert n > 24 * 2 * 1000


@pytest.mark.parametrize("name", ["standard", pytest.param("points", marks=pytest.mark.slow)])
def test_kernels_equal_the_oracle_on_hand_level_choices_with_random_hands(name):
    """Declaring, trump, Domino rank and doubling (the float-heavy linear models) on
    20,000 more hands: decisions of a played game with the hand row replaced by a random
    hand and, when declaring, a random set of two or more contracts still to declare."""
    rules = VARIANTS.get(name, name)
    obs, masks = collect(rules, seed=8, num_games=2)
    phase = decode(obs)["phase"].argmax(axis=1)
    choice = (masks.sum(axis=1) > 1) & (phase <= Phase.DOUBLE)
    templates = np.flatnonzero(choice)
    assert {int(p) for p in phase[templates]} == {0, 1, 2, 3}
    rng = np.random.default_rng(sum(map(ord, name)))
    pick = rng.choice(templates, 20_000)
    obs, masks = obs[pick].copy(), masks[pick].copy()
    obs[:, :52] = 0.0
    for k in range(len(obs)):
        obs[k, rng.choice(52, 13, replace=False)] = 1.0
    declaring = np.flatnonzero(phase[pick] == Phase.DECLARE)
    contracts = rng.random((len(declaring), 7)) < 0.5
    contracts[np.arange(len(declaring)), rng.integers(7, size=len(declaring))] = True
    contracts[np.arange(len(declaring)), rng.integers(7, size=len(declaring))] = True
    masks[declaring, 52:59] = contracts
    assert_same_actions(HeuristicAgent(rules=rules), obs, masks)


def test_act_and_act_batch_equal_the_oracle_through_the_aec_environment():
    """One game through ``barbu_env.env()`` (int8 masks, one decision at a time), the
    heuristic in two seats and taking ``act_batch``'s action, ``act`` and the oracle
    agreeing."""
    env = barbu_env.env(rules="classic")
    env.reset(seed=5)
    agent = HeuristicAgent(rules="classic")
    oracle = OracleHeuristic(rules="classic")
    rnd = RandomAgent(5)
    decisions = 0
    for name in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        o, m = obs["observation"], obs["action_mask"]
        assert m.dtype == np.int8
        if name in ("player_0", "player_2"):
            action = int(agent.act_batch(o[None], m[None])[0])
            assert action == agent.act(obs, name) == oracle.act(obs, name), describe(o, m)
        else:
            action = rnd.act(obs, name)
        env.step(action)
        decisions += 1
    assert decisions > 1000


# ---------------------------------------------------------------- the interface


def test_instances_with_equal_rules_are_asked_together_and_decide_as_each_would():
    standard, other, odd = HeuristicAgent(seed=1), HeuristicAgent(seed=2), HeuristicAgent(rules=VARIANTS["points"])
    assert standard.batch_key == other.batch_key != odd.batch_key
    obs, masks = collect("standard", seed=7, num_games=2)
    obs, masks = obs[:600], masks[:600]
    grouped = standard.act_batch(obs, masks, instances=[standard, other] * 300)
    assert np.array_equal(grouped, standard.act_batch(obs, masks))
    # act_rows asks each group once; rows of the odd-points instance follow its own rules.
    agents = [standard, other, odd] * 200
    rows = act_rows(agents, obs, masks)
    assert np.array_equal(rows, [agents[k].act_batch(obs[k : k + 1], masks[k : k + 1])[0] for k in range(600)])
    assert not np.array_equal(odd.act_batch(obs, masks), standard.act_batch(obs, masks))


@pytest.mark.slow  # a compilation per mask type
def test_act_batch_takes_any_mask_type_and_leaves_its_inputs_alone():
    agent = HeuristicAgent(rules="declarer_only")
    obs, masks = collect("declarer_only", seed=4, num_games=2)
    obs, masks = obs[:800], masks[:800]
    before = obs.copy(), masks.copy()
    expected = agent.act_batch(obs, masks)
    assert np.array_equal(obs, before[0]) and np.array_equal(masks, before[1])
    for m in (masks.astype(np.int8), masks.astype(np.int64), masks.astype(np.float32)):
        assert np.array_equal(agent.act_batch(obs, m), expected)
    assert np.array_equal(agent.act_batch(obs.astype(np.float64), masks), expected)
    assert np.array_equal(agent.act_batch(obs[::-1], masks[::-1]), expected[::-1])  # not contiguous
    assert agent.act_batch(obs[:0], masks[:0]).shape == (0,)
    with pytest.raises(ValueError):
        agent.act_batch(obs[:, :-1], masks)
