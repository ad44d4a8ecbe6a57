"""The product against the oracle (``tests/oracle``, the original Python engine and
observation encoder): seeded full games, random and heuristic, through
``engine.BarbuState``, the AEC environment and ``VectorBarbu``, every decision
compared (seat, mask, observation, rewards, infos, hand results, scores; every public
field of the state in one game in ``DEEP_EVERY``; the information state of the state, the
AEC environment and ``VectorBarbu`` in one game in ``INFO_EVERY``, or in
``SWITCH_INFO_EVERY`` under the switch sets), under every rules preset and the
switches the presets leave at their defaults. ``tests/differential.py`` does the playing
and comparing; this module chooses the games and checks that the comparison can fail."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from differential import play
from oracle.engine import BarbuState as OracleState

import barbu_env
from barbu_env.envs import aec
from barbu_env.game import engine
from barbu_env.game.rules import Rules, load_rules, preset_names

PRESETS = preset_names()
#: Rules beyond the presets: between them and the presets every switch is played away from
#: its default (``test_every_switch_is_played_away_from_its_default``), with other point values.
SWITCHES = {
    "loose_trumps": Rules(
        barbu_king_first_chance=True,
        end_no_hearts_early=True,
        trumps_must_overtrump=False,
        trumps_must_ruff=False,
        min_declarer_doubles=0,
        no_tricks_points=-3,
        no_hearts_points=-1,
        no_hearts_ace_points=-9,
        no_queens_points=-5,
        barbu_points=-25,
        trumps_points=4,
        domino_scores=(40, 25, 10, -10),
    ),
    # Every double of the declarer owed (7 in 7 hands), spread over the game, with a redouble pass.
    "all_doubles_owed": Rules(
        rotation="every_hand",
        doubling_targets="declarer_only",
        redouble_pass=True,
        min_declarer_doubles=7,
        barbu_king_first_chance=True,
        end_no_queens_early=False,
        no_last_two_points=(-7, -30),
    ),
    "redouble_anyone": Rules(
        redouble_pass=True,
        min_declarer_doubles=3,
        end_no_hearts_early=True,
        end_barbu_early=False,
        trumps_must_ruff=False,
    ),
}
RULESETS = {**{name: load_rules(name) for name in PRESETS}, **SWITCHES}

#: Games in one lockstep batch, and the batches of random games per preset (the slow suite
#: plays 4,096 a preset).
BATCH = 8
RANDOM_BATCHES = 1
#: Heuristic games per preset or switch set.
HEURISTIC_GAMES = 4
#: One game in this many compares every field of the state, every agent's observation, ...
DEEP_EVERY = 32
#: One game in this many compares information states (in the first random batch of each
#: preset, the heuristic games and, every ``SWITCH_INFO_EVERY``-th, the switch sets' games;
#: all the slow games); about 0.4 s of one core per game.
INFO_EVERY = 16
SWITCH_INFO_EVERY = 8
#: Under -m slow, in batches of 128: per preset 4,096 random games, per switch set 512, and
#: 256 heuristic games for each (about 0.09 s of one core per game).
SLOW_BATCH = 128
SLOW_RANDOM_BATCHES = 32
SLOW_SWITCH_BATCHES = 4
SLOW_HEURISTIC_BATCHES = 2


def seed_of(name: str, part: int, offset: int = 0) -> int:
    return offset + 1000 * list(RULESETS).index(name) + part


def full_games(compared: int, games: int) -> bool:
    """Whole 28-hand games were compared (a game is well over 1,000 decisions)."""
    return compared > games * 1000


@pytest.mark.parametrize("part", range(RANDOM_BATCHES))
@pytest.mark.parametrize("preset", [p if p == "standard" else pytest.param(p, marks=pytest.mark.slow) for p in PRESETS])
def test_random_games_play_as_the_oracle(preset, part):
    info_every = INFO_EVERY if part == 0 else 0
    assert full_games(play(preset, seed_of(preset, part), BATCH, deep_every=DEEP_EVERY, info_every=info_every), BATCH)


@pytest.mark.parametrize("name", [n if n in PRESETS else pytest.param(n, marks=pytest.mark.slow) for n in RULESETS])
def test_heuristic_games_play_as_the_oracle(name):
    compared = play(
        RULESETS[name], seed_of(name, 99), HEURISTIC_GAMES, heuristic=True, deep_every=DEEP_EVERY, info_every=INFO_EVERY
    )
    assert full_games(compared, HEURISTIC_GAMES)


@pytest.mark.parametrize(
    "name", [n if n == "redouble_anyone" else pytest.param(n, marks=pytest.mark.slow) for n in SWITCHES]
)
def test_random_games_under_other_switches_play_as_the_oracle(name):
    compared = play(SWITCHES[name], seed_of(name, 0), BATCH, deep_every=DEEP_EVERY, info_every=SWITCH_INFO_EVERY)
    assert full_games(compared, BATCH)


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SLOW_RANDOM_BATCHES))
@pytest.mark.parametrize("preset", PRESETS)
def test_random_games_play_as_the_oracle_at_length(preset, part):
    play(preset, seed_of(preset, part, offset=100_000), SLOW_BATCH, deep_every=DEEP_EVERY, info_every=INFO_EVERY)


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SLOW_HEURISTIC_BATCHES))
@pytest.mark.parametrize("name", list(RULESETS))
def test_heuristic_games_play_as_the_oracle_at_length(name, part):
    play(
        RULESETS[name],
        seed_of(name, part, offset=200_000),
        SLOW_BATCH,
        heuristic=True,
        deep_every=DEEP_EVERY,
        info_every=INFO_EVERY,
    )


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SLOW_SWITCH_BATCHES))
@pytest.mark.parametrize("name", list(SWITCHES))
def test_random_games_under_other_switches_play_as_the_oracle_at_length(name, part):
    play(SWITCHES[name], seed_of(name, part, offset=300_000), SLOW_BATCH, deep_every=DEEP_EVERY, info_every=INFO_EVERY)


def test_every_switch_is_played_away_from_its_default():
    default = Rules()
    for field in dataclasses.fields(Rules):
        values = {getattr(rules, field.name) for rules in RULESETS.values()}
        assert values - {getattr(default, field.name)}, f"{field.name} is only played at its default"


# ---------------------------------------------------------------------- the comparison can fail


def test_a_wrong_observation_in_the_environment_is_caught(monkeypatch):
    observe = aec.raw_env.observe

    def wrong(self, agent):
        seen = observe(self, agent)
        if len(self.game.history) == 40:  # during the first hand's tricks
            seen = {**seen, "observation": seen["observation"].copy()}
            seen["observation"][-1] += 1.0  # the last voids value
        return seen

    monkeypatch.setattr(aec.raw_env, "observe", wrong)
    with pytest.raises(AssertionError, match=r"game 0 decision 40 .*env: observation: differs in \['voids'\]"):
        play("standard", 0, 1, seeded_every=0)


def test_a_wrong_field_of_the_state_is_caught(monkeypatch):
    # A field no observation shows: compared in the deep games (game 0 is one).
    monkeypatch.setattr(engine.BarbuState, "win_card", property(lambda self: -2, lambda self, value: None))
    with pytest.raises(AssertionError, match="game 0 decision 0 .*state: win_card -2, oracle -1"):
        play("standard", 0, 1, seeded_every=0)


# ---------------------------------------------------------------------- the oracle stays apart

ORACLE_DIR = Path(__file__).parent / "oracle"
PACKAGE_DIR = Path(barbu_env.__file__).parent
#: The product modules the oracle may import: no rules logic in them.
ORACLE_MAY_IMPORT = {
    "barbu_env.game.cards",
    "barbu_env.game.constants",
    "barbu_env.game.rules",
    "barbu_env.game.actions",
}


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the modules a file imports (anywhere in it); relative imports
    as ``.name``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_the_oracle_imports_no_rules_code_of_the_product():
    for path in sorted(ORACLE_DIR.glob("*.py")):
        product = {m for m in imported_modules(path) if m.split(".")[0] == "barbu_env"}
        assert product <= ORACLE_MAY_IMPORT, f"{path.name} imports {sorted(product - ORACLE_MAY_IMPORT)}"
    # Loaded in this process, the oracle's state class is its own.
    assert OracleState is not engine.BarbuState and OracleState.__module__ == "oracle.engine"


def test_the_product_does_not_import_the_tests():
    test_modules = {p.stem for p in Path(__file__).parent.glob("*.py")} | {"tests", "oracle"}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        wrong = {m for m in imported_modules(path) if m.split(".")[0] in test_modules}
        assert not wrong, f"{path.relative_to(PACKAGE_DIR)} imports {sorted(wrong)}"


def test_oracle_and_product_deal_a_seeded_game_alike():
    # The differential games dealt from a seed rely on it; said here on its own.
    for seed in range(8):
        o = OracleState.new_game("standard", np.random.default_rng(seed))
        p = engine.BarbuState.new_game("standard", np.random.default_rng(seed))
        assert (p.first_declarer, tuple(p.dealt)) == (o.first_declarer, o.dealt)
