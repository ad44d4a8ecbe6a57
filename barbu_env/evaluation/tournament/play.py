"""Playing a tournament's games: the batched play loop and the worker's job.

Contract: ``play_games`` (and ``play_game``, one game) plays games to their end with the
given agents and deals and returns each game's ``BarbuState`` and doubles
(``PlayedGame``); ``_play_job`` plays the deal sets of one ``schedule._Job`` (the four
seatings of each, every game's agents built from ``schedule.agent_seed``) and returns
its games' ``GameData`` rows and the game records asked for. Both step their games
together on one ``barbu_env.game.vector.VectorBarbu`` through the batched play driver
(``barbu_env.game.driver.play``, in ``_play_batch``), every decision put to its agent exactly
as ``barbu_env.env()`` would put it. The
results are a pure function of the agents, rules and deals: no clock, no global state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from barbu_env.agents import Agent, make_agent
from barbu_env.evaluation.records import GameRecord
from barbu_env.game.constants import NUM_PLAYERS
from barbu_env.game.driver import Played, Seated, play
from barbu_env.game.engine import BarbuState
from barbu_env.game.position import Positions
from barbu_env.game.rules import Rules, load_rules
from barbu_env.game.vector import VectorBarbu

from .schedule import SEATINGS, _Job, agent_seed, deal_set, seating


@dataclass
class PlayedGame:
    """A finished game and the doubles made in it."""

    state: BarbuState
    doubles: np.ndarray  # int8 [28, 4, 4]: [h, i, j] = 1 if seat i doubled seat j in hand h, 2 if it redoubled


def play_game(agents: Sequence[Agent], rules: Rules, first_declarer: int, deals: Sequence) -> PlayedGame:
    """Play one game with ``agents[seat]`` choosing for each seat, every decision put to
    its agent as ``barbu_env.env()`` would put it (same observation dict, same agent
    name)."""
    return play_games([agents], rules, [first_declarer], [deals])[0]


def play_games(
    agent_sets: Sequence[Sequence[Agent]], rules: Rules, first_declarers: Sequence[int], deals: Sequence[Sequence]
) -> list[PlayedGame]:
    """Play several games together, game g with ``agent_sets[g][seat]`` in each seat and
    hand h dealt ``deals[g][h]`` (hands without a deal dealt as ``BarbuState.new_game``
    deals them from ``numpy.random.default_rng(0)``).

    The games step together on the batched engine (``_play_batch``): at every step the
    decisions of all live games are handed to their agents at once, grouped
    (``driver.Seated``: row i the observation and mask of one game's seat to act, its
    agent, and that seat's agent name). Each game's ``BarbuState`` is then rebuilt from
    its actions."""
    rules = load_rules(rules)
    states = [_new_state(rules, f, d) for f, d in zip(first_declarers, deals)]
    played = _play_batch(agent_sets, states, rules)
    return [PlayedGame(_replay(state, played.history(g)), played.hands.doubles[g]) for g, state in enumerate(states)]


def _new_state(rules: Rules, first_declarer: int, deals: Sequence) -> BarbuState:
    """A game at its first decision; every hand not in ``deals`` dealt from ``default_rng(0)``."""
    return BarbuState.new_game(rules, rng=np.random.default_rng(0), first_declarer=first_declarer, deals=deals)


def _replay(state: BarbuState, actions: Sequence[int]) -> BarbuState:
    """``state`` (left as it is) played on with ``actions``: a new state."""
    state = state.clone()
    for action in actions:
        state.apply_action(action)
    return state


def _play_batch(agent_sets: Sequence[Sequence[Agent]], states: Sequence[BarbuState], rules: Rules) -> Played:
    """Play the games that start at ``states`` (fresh games under ``rules``, left as they
    are) to their end on one ``VectorBarbu``, game g with ``agent_sets[g][seat]`` in each
    seat, through the batched play driver (``barbu_env.game.driver.play``): every decision,
    forced ones included, put to its agent exactly as ``barbu_env.env()`` puts it; the
    hands' results and doubles from the engine's record of each hand (``hands``), every
    action kept (``history``)."""
    env = VectorBarbu(len(states), rules=rules, seed=0, copy=False)
    start = env.load(Positions.concatenate([Positions.from_state(s) for s in states]))
    return play(env, Seated.per_game(agent_sets), start, hands=True, history=True)


@dataclass
class GameData:
    """Per-game arrays of a tournament (seats absolute), games in index order."""

    game: np.ndarray  # [G] game index: deal_set * 4 + seating
    first_declarer: np.ndarray  # [G]
    scores: np.ndarray  # [G, 4] final score of each seat
    declarer: np.ndarray  # [G, 28] seat declaring each hand
    contract: np.ndarray  # [G, 28] contract index of each hand
    raw: np.ndarray  # [G, 28, 4] raw hand scores per seat
    settled: np.ndarray  # [G, 28, 4] settled hand scores per seat
    doubles: np.ndarray  # [G, 28, 4, 4] see PlayedGame.doubles

    @property
    def deal_set(self) -> np.ndarray:
        return self.game // SEATINGS

    @property
    def rotation(self) -> np.ndarray:
        return self.game % SEATINGS

    @classmethod
    def concat(cls, parts: Sequence[GameData]) -> GameData:
        fields = cls.__dataclass_fields__
        merged = cls(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in fields})
        order = np.argsort(merged.game, kind="stable")
        return cls(**{f: getattr(merged, f)[order] for f in fields})


def _play_job(job: _Job) -> tuple[GameData, list[tuple[int, GameRecord]]]:
    """Play the four seatings of each deal set of ``job`` together (``_play_batch``);
    the records of its games below ``job.record_games`` replay their actions."""
    games = []  # (set_index, rotation, seeds, agents, state) of every game of the job
    for set_index in range(job.start, job.stop):
        first_declarer, deals = deal_set(job.seed, set_index)
        state = _new_state(job.rules, first_declarer, deals)  # the four seatings share the start
        for rotation in range(SEATINGS):
            who = seating(rotation)
            seeds = [agent_seed(job.seed, set_index, rotation, seat) for seat in range(NUM_PLAYERS)]
            agents = [
                make_agent(job.specs[who[seat]], seed=seeds[seat], rules=job.rules) for seat in range(NUM_PLAYERS)
            ]
            games.append((set_index, rotation, seeds, agents, state))
    played = _play_batch([g[3] for g in games], [g[4] for g in games], job.rules)
    hands = played.hands
    index = np.array([s * SEATINGS + r for s, r, *_ in games], dtype=np.int64)
    data = GameData(
        game=index,
        first_declarer=np.array([g[4].first_declarer for g in games], dtype=np.int16),
        scores=played.scores.astype(np.int32),
        declarer=hands.declarer,
        contract=hands.contract,
        raw=hands.raw,
        settled=hands.settled,
        doubles=hands.doubles,
    )
    records = []
    for g, (set_index, rotation, seeds, _, start) in enumerate(games):
        if index[g] >= job.record_games:
            continue
        who = seating(rotation)
        metadata = {
            "tournament_seed": job.seed,
            "deal_set": set_index,
            "seating": rotation,
            "game": int(index[g]),
            "specs": [str(job.specs[w]) for w in who],
            "agent_seeds": seeds,
        }
        state = _replay(start, played.history(g))
        records.append((int(index[g]), GameRecord.from_state(state, [job.labels[w] for w in who], metadata)))
    return data, records
