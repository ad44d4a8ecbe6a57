"""What a tournament plays: its size, the deal sets, the seatings, the seeds, the labels
and the jobs that cut it up.

Contract: the deal sets, seatings, seeds, labels and jobs are pure functions of their
arguments (the seed of a tournament, a deal set's index, a seating's rotation, a seat);
nothing here plays a game. The checks (``check_games``, ``check_agents``,
``check_seed``) refuse, with a ``ValueError`` saying why, what no tournament could play,
before any game is played (``check_agents`` builds an agent given parameters once, to
see that it takes them). See the package
docstring (``barbu_env.evaluation.tournament``) for why the seatings are cyclic and why the seating
is part of each agent's seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from barbu_env.agents import make_agent
from barbu_env.agents.registry import AgentSpec
from barbu_env.game.constants import NUM_HANDS, NUM_PLAYERS
from barbu_env.game.rules import Rules

#: Games per deal set: one per cyclic seating.
SEATINGS = NUM_PLAYERS
#: SeedSequence stream tags: deals and agents draw from disjoint streams of a deal set.
_DEAL_STREAM, _AGENT_STREAM = 0, 1
SEATING_RULE = "cyclic: in seating r, agent k sits in seat (k + r) % 4"
#: The most deal sets in one job (its games, four per deal set, step together on one engine).
JOB_DEAL_SETS = 16
#: About how many jobs a tournament is cut into, to spread over the workers (fewer where it
#: has fewer deal sets, more once its jobs have ``JOB_DEAL_SETS`` deal sets each).
JOBS_PER_TOURNAMENT = 16


# ---------------------------------------------------------------------- checks before play


def check_games(games: int) -> int:
    """``games`` if a tournament can be asked for it (at least 1); otherwise ``ValueError``."""
    if games < 1:
        raise ValueError(f"games must be at least 1, not {games}")
    return int(games)


def deal_sets(games: int) -> int:
    """Deal sets that play ``games`` games: ``games`` rounded up to a multiple of 4, over 4.

    >>> deal_sets(1), deal_sets(8), deal_sets(9)
    (1, 2, 3)
    """
    return -(-games // SEATINGS)


def check_agents(specs: Sequence[AgentSpec], rules: Rules | str | Mapping | None = None) -> None:
    """Refuse, in one line, a spec that names no agent (neither registered, nor a file, nor an
    importable object) or that gives its agent a parameter it does not take or a bad value
    (the agent is built once, under ``rules``, to see)."""
    for spec in specs:
        if spec.params or (spec.factory is None and not Path(spec.name).exists()):
            make_agent(spec, rules=rules)


def check_seed(seed: int) -> int:
    """``seed`` if a tournament can be seeded with it (non-negative); otherwise ``ValueError``."""
    if seed < 0:
        raise ValueError(f"seed must be non-negative, not {seed}")
    return seed


def rules_name(rules: Rules | str | Mapping | None) -> str:
    """How results name the rules asked for: a rules file's or preset's name as given,
    ``standard`` for the default, ``custom`` for values given directly.

    >>> rules_name(None), rules_name("classic"), rules_name({"trumps_must_ruff": False})
    ('standard', 'classic', 'custom')
    """
    return rules if isinstance(rules, str) else ("standard" if rules is None else "custom")


# ---------------------------------------------------------------------- deal sets and seating


def deal_set(seed: int, index: int) -> tuple[int, list[list[list[int]]]]:
    """The first declarer and the 28 deals (four sorted lists of 13 card ids each) of deal
    set ``index`` of a tournament seeded ``seed``."""
    rng = np.random.default_rng([seed, index, _DEAL_STREAM])
    first_declarer = int(rng.integers(NUM_PLAYERS))
    deals = [np.sort(rng.permutation(52).reshape(NUM_PLAYERS, 13), axis=1).tolist() for _ in range(NUM_HANDS)]
    return first_declarer, deals


def seating(rotation: int) -> tuple[int, ...]:
    """The agent (index into the agent list) in each seat in seating ``rotation``.

    >>> seating(0), seating(1)
    ((0, 1, 2, 3), (3, 0, 1, 2))
    """
    return tuple((seat - rotation) % NUM_PLAYERS for seat in range(NUM_PLAYERS))


def agent_seed(seed: int, set_index: int, rotation: int, seat: int) -> int:
    """Seed of the agent in ``seat`` in seating ``rotation`` of deal set ``set_index``."""
    return int(np.random.SeedSequence([seed, set_index, _AGENT_STREAM, rotation, seat]).generate_state(1)[0])


def agent_labels(specs: Sequence[AgentSpec | str]) -> tuple[list[str], list[str]]:
    """(entry label of each spec, instance label of each agent): a spec as written, less the
    opt-in to load a pickled file (``trust=true``), a file by its file name unless two
    files share it; a spec given more than once is numbered.

    >>> agent_labels(["heuristic", "random", "random", "runs/a/model.zip:trust=true"])
    (['heuristic', 'random', 'random', 'model.zip'], ['heuristic', 'random#1', 'random#2', 'model.zip'])
    >>> agent_labels(["runs/a/best.pt:device=cpu", "pimc:worlds=4,worlds_from=b/belief.pt"])[0]
    ['best.pt:device=cpu', 'pimc:worlds=4,worlds_from=b/belief.pt']
    """
    specs = [AgentSpec.parse(s) for s in specs]
    shown = {spec: spec.without("trust") for spec in dict.fromkeys(specs)}
    short = {k: Path(s.name).name + str(s)[len(s.name) :] if s.factory is None else str(s) for k, s in shown.items()}
    taken = list(short.values())
    names = {k: label if taken.count(label) == 1 else str(shown[k]) for k, label in short.items()}
    entry = [names[s] for s in specs]
    seen: dict[AgentSpec, int] = {}
    instance = []
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        instance.append(names[spec] if specs.count(spec) == 1 else f"{names[spec]}#{seen[spec]}")
    return entry, instance


def seats_of_agents(rotation: np.ndarray) -> np.ndarray:
    """[G, 4] the seat of agent k (column k) in each game, from the games' seatings
    (the inverse of ``seating``).

    >>> seats_of_agents(np.array([0, 1])).tolist()
    [[0, 1, 2, 3], [1, 2, 3, 0]]
    """
    return (np.arange(NUM_PLAYERS)[None, :] + np.asarray(rotation)[:, None]) % NUM_PLAYERS


# ---------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class _Job:
    """Deal sets [start, stop) of a tournament, for one worker call."""

    specs: tuple[AgentSpec, ...]
    labels: tuple[str, ...]
    rules: Rules
    seed: int
    start: int
    stop: int
    record_games: int  # games with an index below this are returned as records


def jobs(
    specs: Sequence[AgentSpec], labels: Sequence[str], rules: Rules, seed: int, n_sets: int, record_games: int
) -> Iterator[_Job]:
    """The jobs of a tournament of ``n_sets`` deal sets, made one at a time as they are
    asked for: runs of n_sets / ``JOBS_PER_TOURNAMENT`` deal sets (rounded up), at most
    ``JOB_DEAL_SETS`` (so up to 64 games played together), cut the same way whatever the
    number of workers, so that batched agents see the same batches.

    >>> [(j.start, j.stop) for j in jobs(["random"] * 4, ["r"] * 4, None, 0, 40, 0)][:3]
    [(0, 3), (3, 6), (6, 9)]
    """
    chunk = max(1, min(JOB_DEAL_SETS, -(-n_sets // JOBS_PER_TOURNAMENT)))
    for a in range(0, n_sets, chunk):
        yield _Job(tuple(specs), tuple(labels), rules, seed, a, min(a + chunk, n_sets), record_games)
