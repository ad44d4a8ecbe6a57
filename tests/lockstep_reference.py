"""The duplicate tournament's game loop as it was before it moved to the batched engine,
kept as the reference that tests/test_tournament_vector.py compares the tournament with:
one ``BarbuState`` per game, the games of a job stepped in
lockstep, every live game's decision put to ``agents.act_rows`` at each step.

``play_job`` is what ``barbu_env.evaluation.tournament._play_job`` was; ``seed_of`` stands in for
``agent_seed`` (a test gives a wrong one to show that the comparison notices it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from barbu_env.agents import Agent, act_rows, make_agent
from barbu_env.evaluation.records import GameRecord
from barbu_env.evaluation.tournament import SEATINGS, GameData, PlayedGame, _Job, agent_seed, deal_set, seating
from barbu_env.game.actions import AGENTS, DOUBLE_OFFSET, NUM_ACTIONS, mask_array
from barbu_env.game.engine import CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS, BarbuState, IllegalActionError, Phase
from barbu_env.game.observation import OBS_DIM
from barbu_env.game.rules import Rules


def play_games(
    agent_sets: Sequence[Sequence[Agent]], rules: Rules, first_declarers: Sequence[int], deals: Sequence[Sequence]
) -> list[PlayedGame]:
    """Play several games in lockstep, game g with ``agent_sets[g][seat]`` in each seat."""
    states = [
        BarbuState.new_game(rules, rng=np.random.default_rng(0), first_declarer=f, deals=d)
        for f, d in zip(first_declarers, deals)
    ]
    doubles = [np.zeros((NUM_HANDS, NUM_PLAYERS, NUM_PLAYERS), dtype=np.int8) for _ in states]
    observations = np.empty((len(states), OBS_DIM), dtype=np.float32)
    masks = np.empty((len(states), NUM_ACTIONS), dtype=np.int8)
    live = list(range(len(states)))
    while live:
        seats = [states[g].current_player for g in live]
        for row, (g, seat) in enumerate(zip(live, seats)):
            observations[row] = states[g].observe(seat)
            masks[row] = mask_array(states[g].legal_mask())
        agents = [agent_sets[g][seat] for g, seat in zip(live, seats)]
        actions = act_rows(agents, observations[: len(live)], masks[: len(live)], [AGENTS[s] for s in seats])
        still = []
        for g, seat, action in zip(live, seats, actions.tolist()):
            state = states[g]
            phase = state.phase
            try:
                state.apply_action(action, observe=True)
            except IllegalActionError as e:
                name = getattr(agent_sets[g][seat], "name", type(agent_sets[g][seat]).__name__)
                raise IllegalActionError(f"agent {name!r} in seat {seat}: {e}") from None
            if phase is Phase.DOUBLE:  # doubling never ends a hand: the hand and its doubles are still there
                _note_doubles(state, seat, state.history[-1] - DOUBLE_OFFSET, doubles[g][state.hand_number])
            if not state.is_terminal:
                still.append(g)
        live = still
    return [PlayedGame(state, d) for state, d in zip(states, doubles)]


def _note_doubles(state: BarbuState, seat: int, named: int, out: np.ndarray) -> None:
    for k in range(3):
        if (named >> k) & 1:
            target = (seat + 1 + k) % NUM_PLAYERS
            out[seat, target] = 2 if (state.named[target] >> seat) & 1 else 1


def play_job(
    job: _Job, seed_of: Callable[[int, int, int, int], int] = agent_seed
) -> tuple[GameData, list[tuple[int, GameRecord]]]:
    """Play the four seatings of each deal set of ``job`` (the tournament's job before the
    batched engine)."""
    rows: dict[str, list] = {f: [] for f in GameData.__dataclass_fields__}
    records = []
    games = []
    for set_index in range(job.start, job.stop):
        first_declarer, deals = deal_set(job.seed, set_index)
        for rotation in range(SEATINGS):
            who = seating(rotation)
            seeds = [seed_of(job.seed, set_index, rotation, seat) for seat in range(NUM_PLAYERS)]
            agents = [
                make_agent(job.specs[who[seat]], seed=seeds[seat], rules=job.rules) for seat in range(NUM_PLAYERS)
            ]
            games.append((set_index, rotation, first_declarer, deals, seeds, agents))
    played_games = play_games([g[5] for g in games], job.rules, [g[2] for g in games], [g[3] for g in games])
    for (set_index, rotation, first_declarer, _, seeds, _), played in zip(games, played_games):
        game_index = set_index * SEATINGS + rotation
        who = seating(rotation)
        state = played.state
        results = state.results
        rows["game"].append(game_index)
        rows["first_declarer"].append(first_declarer)
        rows["scores"].append(state.scores)
        rows["declarer"].append([r.declarer for r in results])
        rows["contract"].append([CONTRACT_NAMES.index(r.contract) for r in results])
        rows["raw"].append([r.raw for r in results])
        rows["settled"].append([r.settled for r in results])
        rows["doubles"].append(played.doubles)
        if game_index < job.record_games:
            metadata = {
                "tournament_seed": job.seed,
                "deal_set": set_index,
                "seating": rotation,
                "game": game_index,
                "specs": [str(job.specs[w]) for w in who],
                "agent_seeds": seeds,
            }
            records.append((game_index, GameRecord.from_state(state, [job.labels[w] for w in who], metadata)))
    dtypes = {"game": np.int64, "raw": np.int32, "settled": np.int32, "scores": np.int32, "doubles": np.int8}
    data = GameData(**{f: np.asarray(v, dtype=dtypes.get(f, np.int16)) for f, v in rows.items()})
    return data, records
