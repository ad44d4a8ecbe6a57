"""Replay the reference games (tests/data/golden, format in its README upstream) through the
product's engine and through the oracle's (tests/oracle): at every decision each must ask
the same seat and offer exactly the same legal actions, and every hand and the game must
score as recorded. Then the same games through every level of the product against the
oracle, every field of every decision compared (tests/differential.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from differential import play
from oracle.engine import BarbuState as OracleState

from barbu_env.game.engine import NUM_HANDS, BarbuState
from barbu_env.game.rules import Rules

GOLDEN_DIR = Path(__file__).parent / "data" / "golden"
GOLDEN_GAMES = sorted(GOLDEN_DIR.glob("*.json"))


def test_the_reference_games_are_present():
    assert len(GOLDEN_GAMES) >= 8, f"expected the 8 reference games in {GOLDEN_DIR}"


@pytest.mark.parametrize("engine", [BarbuState, OracleState], ids=["product", "oracle"])
@pytest.mark.parametrize("path", GOLDEN_GAMES, ids=lambda p: p.stem)
def test_reference_game_replays_decision_by_decision(path, engine):
    game = json.loads(path.read_text())
    assert len(game["deals"]) == NUM_HANDS
    state = engine.new_game(
        rules=Rules(), rng=np.random.default_rng(0), first_declarer=game["first_declarer"], deals=game["deals"]
    )
    expected_hands = iter(game["hands"])
    for step, decision in enumerate(game["decisions"]):
        where = f"{path.stem} decision {step} (hand {state.hand_number}, phase {state.phase.name})"
        assert not state.is_terminal, f"{where}: the game ended early"
        assert state.current_player == decision["seat"], where
        assert state.legal_actions() == decision["legal"], where
        result = state.apply_action(decision["action"])
        if result is not None:
            hand = next(expected_hands)
            assert result.hand == hand["hand"], where
            assert result.declarer == hand["declarer"], where
            assert result.contract == hand["contract"], where
            assert list(result.raw) == hand["raw"], where
            assert list(result.settled) == hand["settled"], where
    assert state.is_terminal
    assert next(expected_hands, None) is None, "the replay finished fewer hands than recorded"
    assert len(state.results) == NUM_HANDS
    assert state.scores == game["final_scores"]
    assert state.legal_actions() == []


def test_reference_games_play_through_every_level_as_the_oracle():
    games = [json.loads(path.read_text()) for path in GOLDEN_GAMES]
    scripts = [(g["first_declarer"], g["deals"], [d["action"] for d in g["decisions"]]) for g in games]
    assert play(Rules(), 0, len(scripts), scripts=scripts) == sum(len(g["decisions"]) for g in games)
