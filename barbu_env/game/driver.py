"""The batched play driver: games stepped together on one ``VectorBarbu``, every decision handed to its player.

Everything in barbu that plays many games at once — the duplicate tournament, the
trainer's rollouts, ``pimc``'s searches, the benchmark — plays them with :func:`play`:

>>> from barbu_env.agents import make_agent
>>> env = VectorBarbu(8, seed=1, copy=False)
>>> played = play(env, Seated.everywhere(make_agent("random", seed=2), 8), start=env.reset())
>>> played.scores.sum(axis=1).tolist() == [0.0] * 8, bool((played.lengths > 1000).all())
(True, True)

The contract
------------
``play(env, decide, start=(obs, masks, seat))`` steps every game of ``env`` from
``start`` (what ``env.reset`` or ``env.load`` returned) until each game's episode ends
(``until="episode"``: the step with ``dones``), or its hand (``until="hand"``: the step
with ``infos["hand_over"]``); a game that has ended is *over* for the driver: it is
stepped with its first legal action until all have ended (the engine resets it at once;
that new game is nobody's). With ``until=None`` the games play on through the engine's
resets until ``on_step`` returns True (a benchmark's clock). At each step:

1. the *asked* games are the live ones, less those whose decision is forced (a single
   legal action) when ``ask_forced=False``: these play it without asking anyone;
2. ``decide(rows, obs, masks, seats)`` returns int64 actions for the asked games
   ``rows`` (game indices, ascending), given their observations float32, masks int8
   ``[n, 85]`` and seats to act — exactly what ``barbu_env.env()`` gives those seats (when
   every game is asked, the engine's own buffers, valid until the next step);
   ``first`` actions, if given, replace the first step's decisions for every game;
3. the engine steps every game; ``on_step(step)`` (a :class:`EngineStep`) sees what it gave
   back — rewards, the games whose hand or episode ended, the new observations — before
   the games that ended are marked over.

An illegal action raises ``IllegalActionError`` and applies nothing; when ``decide`` has
an ``illegal(rows, actions, masks, seats)`` method (:class:`Seated` has), that names the
player first.

:class:`Played` holds each game's ``scores`` (the episode's final scores, the engine's
``infos["final_scores"]``; the hand's settled scores with ``until="hand"``; zeros with
``until=None``), its ``lengths`` (steps it was live: its decisions from the start), the
decisions stepped in all, and with ``hands=True`` the table of every
hand each game finished (declarer, contract, raw and settled scores, doubles — the
engine's record), with ``history=True`` every action of each game in order.

:class:`Seated` is the ``decide`` of games whose seats are played by agents
(``barbu_env.agents``): ``table[g, s]`` indexes the agent in seat s of game g, and the
rows of a step are grouped with ``agents.act_rows`` (instances sharing a ``batch_key`` in
one call), each row with its seat's agent name.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..util.files import quote
from .actions import AGENTS, NUM_ACTIONS, action_text
from .constants import NUM_HANDS, NUM_PLAYERS
from .engine import IllegalActionError
from .vector import VectorBarbu

UNTIL = ("episode", "hand", None)

Decide = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(slots=True)
class EngineStep:
    """What one step of the engine gave back, for ``play``'s ``on_step``: game-indexed
    arrays of every game (``env.step``'s, valid until the next step), ``live`` the games
    that were live before it (the driver's own array: read it, don't keep it), ``ended``
    the live games whose hand (``until="hand"``) or episode ended with it."""

    actions: np.ndarray  # int64 [B]: every game's action, fillers for the games over
    obs: np.ndarray
    masks: np.ndarray
    seat: np.ndarray
    rewards: np.ndarray  # float32 [B, 4]
    dones: np.ndarray  # bool [B]
    infos: dict[str, np.ndarray]
    live: np.ndarray  # bool [B]
    ended: np.ndarray  # int64 [k]: game indices


@dataclass
class Hands:
    """The hands each game finished, game g in row g, hand h in column h (seats absolute)."""

    declarer: np.ndarray  # int16 [G, 28]
    contract: np.ndarray  # int16 [G, 28]
    raw: np.ndarray  # int32 [G, 28, 4]
    settled: np.ndarray  # int32 [G, 28, 4]
    doubles: np.ndarray  # int8 [G, 28, 4, 4]: [g, h, i, j] 1 if i doubled j in hand h, 2 if i redoubled j

    @classmethod
    def empty(cls, n: int) -> Hands:
        return cls(
            np.zeros((n, NUM_HANDS), dtype=np.int16),
            np.zeros((n, NUM_HANDS), dtype=np.int16),
            np.zeros((n, NUM_HANDS, NUM_PLAYERS), dtype=np.int32),
            np.zeros((n, NUM_HANDS, NUM_PLAYERS), dtype=np.int32),
            np.zeros((n, NUM_HANDS, NUM_PLAYERS, NUM_PLAYERS), dtype=np.int8),
        )

    def note(self, games: np.ndarray, last: dict[str, np.ndarray]) -> None:
        """Copy the engine's record of the hand just finished by ``games``."""
        hand = last["hand"][games]
        self.declarer[games, hand] = last["declarer"][games]
        self.contract[games, hand] = last["contract"][games]
        self.raw[games, hand] = last["raw"][games]
        self.settled[games, hand] = last["settled"][games]
        self.doubles[games, hand] = last["doubles"][games]


@dataclass
class Played:
    """What ``play`` came to, game g in row g."""

    scores: np.ndarray  # float64 [G, 4]: the episode's final scores, or the hand's settled scores
    lengths: np.ndarray  # int64 [G]: decisions of each game (episode, or hand)
    decisions: int  # decisions stepped for live games, forced ones included
    hands: Hands | None = None
    steps: list[np.ndarray] = field(default_factory=list)  # with history: every step's int8 actions [G]

    def history(self, g: int) -> list[int]:
        """Every action of game ``g``, in order (``play(..., history=True)``)."""
        return [int(s[g]) for s in self.steps[: self.lengths[g]]]


def play(
    env: VectorBarbu,
    decide: Decide,
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    until: str | None = "episode",
    ask_forced: bool = True,
    first: np.ndarray | None = None,
    on_step: Callable[[EngineStep], Any] | None = None,
    hands: bool = False,
    history: bool = False,
) -> Played:
    """Step every game of ``env`` from ``start`` to the end of its episode or hand,
    each decision put to ``decide`` (see the module docstring)."""
    obs, masks, seat = start
    n = env.num_games
    live = np.ones(n, dtype=bool)
    scores = np.zeros((n, NUM_PLAYERS), dtype=np.float64)
    lengths = np.zeros(n, dtype=np.int64)
    table = Hands.empty(n) if hands else None
    steps: list[np.ndarray] = []
    decisions = t = 0
    n_live = n
    everyone = np.arange(n)
    no_games = everyone[:0]
    while n_live:
        rows = everyone if n_live == n else np.flatnonzero(live)
        if first is not None:
            actions, first = np.asarray(first, dtype=np.int64).copy(), None
            asked = no_games
        else:
            asked = rows if ask_forced else rows[masks[rows].sum(axis=1) > 1]
            # the first legal action for forced decisions and games over (none when every game is asked)
            actions = None if len(asked) == n else masks.argmax(axis=1)
        if len(asked):
            whole = len(asked) == n  # the engine's own buffers, as good as copies until the next step
            m = (masks if whole else masks[asked]).view(np.int8)
            asked_seats = seat if whole else seat[asked]
            chosen = np.asarray(decide(asked, obs if whole else obs[asked], m, asked_seats), dtype=np.int64)
            if whole:
                actions = chosen
            else:
                actions[asked] = chosen
        try:
            obs, masks, seat, rewards, dones, infos = env.step(actions)
        except IllegalActionError:  # nothing was applied: name the player if decide can
            blame = getattr(decide, "illegal", None)
            if blame is not None and len(asked):
                blame(asked, chosen, m, asked_seats)
            raise
        t += 1
        decisions += len(rows)
        if history:
            steps.append(actions.astype(np.int8))
        ended = no_games
        if (table is not None or until == "hand") and infos["hand_over"].any():
            over = np.flatnonzero(infos["hand_over"] & live)
            if table is not None and len(over):
                table.note(over, env.last_hands())
            if until == "hand":
                ended = over
                scores[ended] = rewards[ended]  # the hand's settled scores
        if until == "episode" and dones.any():
            ended = np.flatnonzero(dones & live)
            scores[ended] = infos["final_scores"][ended]
        if on_step is not None:
            stop = on_step(EngineStep(actions, obs, masks, seat, rewards, dones, infos, live, ended))
            if stop and until is None:
                break
        if len(ended):
            lengths[ended] = t
            live[ended] = False
            n_live -= len(ended)
    lengths[live] = t
    return Played(scores, lengths, decisions, table, steps)


# ---------------------------------------------------------------------- asking agents


def act_by_rows(
    agents: Any | Sequence[Any], observations: np.ndarray, masks: np.ndarray, names: Sequence[str | None] | None
) -> np.ndarray:
    """int64 ``[B]``: ``act`` row by row, row i by ``agents[i]`` (or by ``agents``, one
    object, for every row) with ``names[i]`` as its acting agent's name (the base
    ``agents.Agent.act_batch`` of an agent that writes only ``act``)."""
    n = len(observations)
    who = agents if isinstance(agents, Sequence) else [agents] * n
    names = names if names is not None else [None] * n
    return np.array(
        [a.act({"observation": o, "action_mask": m}, nm) for a, o, m, nm in zip(who, observations, masks, names)],
        dtype=np.int64,
    ).reshape(n)


def serves_rows(agent: Any) -> bool:
    """Whether ``agent`` answers row by row through ``act`` (it writes no ``act_batch``
    of its own): then each row is asked with its acting agent's name."""
    batch = getattr(type(agent), "act_batch", None)
    return batch is None or getattr(batch, "serves_rows", False)


def ask(
    agent: Any,
    observations: np.ndarray,
    masks: np.ndarray,
    names: Sequence[str | None] | None = None,
    instances: Sequence[Any] | None = None,
) -> np.ndarray:
    """One agent's actions, int64 ``[B]``, for a batch: its own ``act_batch`` (with
    ``instances`` when given: rows decided by instances sharing its ``batch_key``), else
    ``act`` row by row with ``names[i]`` as row i's acting agent's name — for an
    ``agents.Agent`` and for any object with ``act`` alike."""
    if serves_rows(agent):
        return act_by_rows(agent if instances is None else instances, observations, masks, names)
    if instances is None:
        return np.asarray(agent.act_batch(observations, masks), dtype=np.int64)
    return np.asarray(agent.act_batch(observations, masks, instances=instances), dtype=np.int64)


def group_ids(agents: Sequence[Any]) -> np.ndarray:
    """int64 ``[B]``: a number per group of agents that :func:`act_rows` asks in one call
    (the instances with an equal ``batch_key``; else one agent object), numbered in order
    of first appearance.

    >>> from barbu_env.agents import make_agent
    >>> a, b = make_agent("heuristic", seed=1), make_agent("heuristic", seed=2)
    >>> c = make_agent("random", seed=3)
    >>> group_ids([c, a, b, c, a]).tolist()
    [0, 1, 1, 0, 1]
    """
    ids: dict[tuple[str, Hashable], int] = {}
    keys = (getattr(agent, "batch_key", None) for agent in agents)
    return np.array(
        [ids.setdefault(("object", id(a)) if k is None else ("group", k), len(ids)) for a, k in zip(agents, keys)],
        dtype=np.int64,
    )


def act_rows(
    agents: Sequence[Any],
    observations: np.ndarray,
    masks: np.ndarray,
    names: Sequence[str | None] | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Actions int64 ``[B]`` for a batch in which row i is decided by ``agents[i]``.

    Rows are grouped so that each group is asked once, groups in order of their first
    row: the instances with an equal ``batch_key`` through one ``act_batch(...,
    instances=...)`` call (one object alone: plain ``act_batch``), any other agent
    through :func:`ask` (its ``act_batch``, else ``act`` row by row with ``names[i]`` as
    the acting agent's name). ``groups``: the rows' :func:`group_ids`, for a caller that
    asks the same agents step after step and numbers them once (grouping costs more per
    row than some agents' decisions); by default numbered here.

    >>> from barbu_env.agents import make_agent
    >>> masks = np.zeros((3, 85), dtype=np.int8); masks[:, [52, 55]] = 1
    >>> a = make_agent("random", seed=1)
    >>> actions = act_rows([a, a, a], np.zeros((3, 1132), np.float32), masks)
    >>> actions.dtype, sorted(set(actions) - {52, 55})
    (dtype('int64'), [])
    """
    if len(agents) == 0:
        return np.zeros(0, dtype=np.int64)
    groups = group_ids(agents) if groups is None else np.asarray(groups)
    if (groups == groups[0]).all():  # one group (the common case: no gathering)
        return _ask_group(agents, observations, masks, names)
    actions = np.empty(len(agents), dtype=np.int64)
    for group in dict.fromkeys(groups.tolist()):
        rows = np.flatnonzero(groups == group)
        members = [agents[i] for i in rows]
        actions[rows] = _ask_group(
            members, observations[rows], masks[rows], None if names is None else [names[i] for i in rows]
        )
    return actions


def _ask_group(
    members: Sequence[Any], observations: np.ndarray, masks: np.ndarray, names: Sequence[str | None] | None
) -> np.ndarray:
    """The rows of one group: one object, or instances sharing a ``batch_key``."""
    first = members[0]
    alone = all(m is first for m in members)
    return ask(first, observations, masks, names, None if alone else members)


# ---------------------------------------------------------------------- agents at seats


class Seated:
    """``play``'s ``decide`` for games whose seats are played by agents: ``table[g, s]``
    indexes ``agents`` for seat s of game g (see the module docstring)."""

    def __init__(self, agents: Sequence[Any], table: np.ndarray):
        self.agents = list(agents)
        self.table = np.asarray(table, dtype=np.int64)
        # Numbered once for the whole run: grouping costs more per row than some agents' decisions.
        self.groups = group_ids(self.agents)[self.table]

    @classmethod
    def per_game(cls, agent_sets: Sequence[Sequence[Any]]) -> Seated:
        """Game g's seat s played by ``agent_sets[g][s]``."""
        agents = [a for seats in agent_sets for a in seats]
        return cls(agents, np.arange(len(agents)).reshape(len(agent_sets), NUM_PLAYERS))

    @classmethod
    def everywhere(cls, agent: Any, games: int) -> Seated:
        """``agent`` in every seat of ``games`` games."""
        return cls([agent], np.zeros((games, NUM_PLAYERS), dtype=np.int64))

    def __call__(self, rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, seats: np.ndarray) -> np.ndarray:
        who = self.table[rows, seats].tolist()
        agents = [self.agents[k] for k in who]
        names = [AGENTS[s] for s in seats.tolist()]
        return act_rows(agents, obs, masks, names, self.groups[rows, seats])

    def illegal(self, rows: np.ndarray, actions: np.ndarray, masks: np.ndarray, seats: np.ndarray) -> None:
        """Raise ``IllegalActionError`` naming the agent and seat of the first row whose
        action is not legal under its mask, if there is one."""
        valid = (actions >= 0) & (actions < NUM_ACTIONS)
        legal = valid & (masks[np.arange(len(actions)), np.where(valid, actions, 0)] > 0)
        if legal.all():
            return
        row = int(np.argmin(legal))
        action, agent = int(actions[row]), self.agents[self.table[rows[row], seats[row]]]
        name = getattr(agent, "name", type(agent).__name__)
        what = f"{action} ({action_text(action)})" if valid[row] else repr(action)
        options = ", ".join(f"{a} ({action_text(a)})" for a in np.flatnonzero(masks[row]).tolist())
        raise IllegalActionError(
            f"agent {quote(name)} in seat {seats[row]}: illegal action {what}; legal actions: {options}"
        )
