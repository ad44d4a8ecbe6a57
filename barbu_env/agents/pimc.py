"""``pimc``: Perfect-Information Monte Carlo search on the batched engine.

At each decision with more than one legal action, the agent

1. rebuilds the position its observation shows (``barbu_env.position.Positions.
   from_observation``; it never sees the environment),
2. samples ``worlds`` deals of the hidden cards, uniformly among those consistent with
   everything public: cards played, hand sizes, and what the rules made each play
   reveal (the observation's ``excluded`` rows; ``barbu_env.worlds``),
3. plays every legal action in every world and then the rest of the hand with the
   rollout policy (``heuristic`` by default: any agent, asked in batches) for all four
   seats, all worlds x actions of all the games it decides at once stepping together in
   one ``VectorBarbu``, one kernel call per step,
4. takes the action with the best mean settled score of the hand for itself (the same
   worlds for every action; ties go to the lowest action id).

Every kind of decision is searched the same way: the contract (the whole hand played out
under each contract still available), the trump suit, the Domino starting rank, each
doubling option, each card and the Domino pass. A rollout ends with the hand, so when
choosing a contract the agent compares each contract's result on this hand with what
that contract scores on an average hand (``baseline``, measured once per rules and
rollout policy by the same rollouts over random deals): a contract is worth declaring
now when this hand suits it better than the hands still to come are likely to.

What PIMC does not do: it assumes the other players play like its rollout policy and
that it will itself know every hidden card from the next decision on (strategy fusion:
it cannot plan to find out, or to hide, information), and it reads nothing into how the
others declared or doubled. It is deterministic for a seed (without ``time_limit``).

Parameters (``make_agent("pimc", worlds=32)`` or ``"pimc:worlds=32,rollout=random"`` on
the command line): ``worlds`` sampled deals per decision (default 32), ``rollout`` the
rollout policy's agent spec (a registered name or a checkpoint path), ``time_limit``
seconds per decision (worlds are then searched in rounds of up to 8 until the limit or
``worlds`` is reached; results then depend on the machine), ``baseline`` whether
contract choices subtract the contract's average (default true), ``device`` where a
rollout policy that takes one (a trained checkpoint) computes (its own default, the CPU,
unless given: ``"pimc:rollout=runs/x/best.pt,device=cuda"``; ``barbu eval --device``
sets it), ``seed``.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence

import numpy as np

from .._kernels import F_DECLARER
from ..actions import DECLARE_OFFSET
from ..constants import NUM_CONTRACTS, Phase
from ..driver import Seated, play
from ..observation import OFFSETS
from ..position import Positions
from ..rules import Rules, load_rules
from ..vector import VectorBarbu
from ..worlds import sample_worlds
from .base import Agent
from .registry import agent_takes, make_agent, register

#: Worlds per decision by default: the strength and speed table in the README (8, 16, 32, 64
#: worlds against three heuristics) chose it; 400 duplicate games with one pimc seat take
#: minutes on two cores.
DEFAULT_WORLDS = 32
#: Slots stepped together at most: larger searches are played in several batches.
MAX_SLOTS = 8192
#: Worlds per round when a time limit applies.
ROUND_WORLDS = 8
#: Random deals per contract for the contract baselines, and their seed.
BASELINE_DEALS = 512
BASELINE_SEED = 20261130
_PHASE_AT = OFFSETS["phase"][0]


@register("pimc")
class PimcAgent(Agent):
    """Perfect-Information Monte Carlo search (see the module docstring); registered as
    ``pimc``, the constructor's keywords its parameters.

    Instances that share rules and parameters (``batch_key``) are asked together
    (``act_batch`` with ``instances``), and all their searches step in one batch of
    games; each instance samples its worlds with its own generator."""

    #: (rules, rollout spec) -> mean settled score of the declarer per contract on a random deal.
    _baselines: dict[tuple[Rules, str], np.ndarray] = {}

    def __init__(
        self,
        seed: int = 0,
        rules: Rules | str | dict | None = None,
        worlds: int = DEFAULT_WORLDS,
        rollout: str = "heuristic",
        time_limit: float | None = None,
        baseline: bool = True,
        device: str | None = None,
    ):
        if isinstance(worlds, bool) or not isinstance(worlds, int) or worlds < 1:
            raise ValueError(f"pimc: worlds must be a positive int, not {worlds!r}")
        if time_limit is not None and (isinstance(time_limit, bool) or not time_limit > 0):
            raise ValueError(f"pimc: time_limit must be a positive number of seconds, not {time_limit!r}")
        if not isinstance(rollout, str) or rollout.split(":")[0] == "pimc":
            raise ValueError(f"pimc: rollout must be another agent's spec, not {rollout!r}")
        self.rules = load_rules(rules)
        self.worlds = worlds
        self.rollout = rollout
        self.time_limit = time_limit
        self.baseline = bool(baseline)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        placed = {"device": device} if device is not None and agent_takes(rollout, "device") else {}
        self.rollout_agent: Agent = make_agent(rollout, seed=seed, rules=self.rules, **placed)
        self.name = "pimc" if (worlds, rollout) == (DEFAULT_WORLDS, "heuristic") else f"pimc{worlds}-{rollout}"
        self.batch_key: Hashable = ("pimc", self.rules, worlds, rollout, time_limit, self.baseline, device)
        #: Rollout decisions taken by this instance's searches (for the benchmark).
        self.rollout_decisions = 0

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[PimcAgent] | None = None
    ) -> np.ndarray:
        """Row i's action, searched by ``instances[i]`` (by default this agent for every
        row): every row's search in one batch."""
        lead = self
        instances = [self] * len(observations) if instances is None else instances
        masks = np.asarray(masks).astype(bool)
        actions = masks.argmax(axis=1).astype(np.int64)  # the forced ones are done
        rows = [i for i in range(len(instances)) if masks[i].sum() > 1]
        if not rows:
            return actions
        legal = {i: np.flatnonzero(masks[i]) for i in rows}
        bases = {i: Positions.from_observation(observations[i], lead.rules) for i in rows}
        totals = {i: np.zeros(len(legal[i])) for i in rows}
        done = 0
        start = time.perf_counter()
        while done < lead.worlds:
            n = lead.worlds - done if lead.time_limit is None else min(ROUND_WORLDS, lead.worlds - done)
            worlds, first, owners = [], [], []
            for i in rows:
                base = bases[i]
                hidden = sample_worlds(
                    int(base.unknown_cards[0]), base.sizes[0, 1:], base.excluded[0, 1:], n, instances[i].rng
                )
                dealt = base.with_hidden(hidden, check=False)
                for a in legal[i]:
                    worlds.append(dealt)
                    first.append(np.full(n, a))
                owners.append((i, len(legal[i])))
            values, decisions = rollout_values(
                Positions.concatenate(worlds), np.concatenate(first), lead.rules, lead.rollout_agent, observer=0
            )
            lead.rollout_decisions += decisions
            at = 0
            for i, k in owners:
                totals[i] += values[at : at + k * n].reshape(k, n).sum(axis=1)
                at += k * n
            done += n
            if lead.time_limit is not None and time.perf_counter() - start > lead.time_limit:
                break
        for i in rows:
            value = totals[i] / done
            if lead.baseline and observations[i][_PHASE_AT + Phase.DECLARE] > 0.5:
                value = value - lead.contract_baselines()[legal[i] - DECLARE_OFFSET]
            actions[i] = legal[i][int(np.argmax(value))]
        return actions

    def contract_baselines(self) -> np.ndarray:
        """Mean settled score of the declarer per contract, float [7], on random deals
        (the first hand of a game) played out by the rollout policy; cached per rules and
        rollout policy."""
        key = (self.rules, self.rollout)
        if key not in self._baselines:
            self._baselines[key] = _contract_baselines(self.rules, self.rollout_agent)
        return self._baselines[key]


def rollout_values(
    positions: Positions,
    first_actions: np.ndarray,
    rules: Rules,
    agent: Agent,
    observer: int | np.ndarray = 0,
) -> tuple[np.ndarray, int]:
    """For each position: apply ``first_actions[k]``, play the rest of the hand with
    ``agent`` at every seat (``barbu_env.driver.play``, ``until="hand"``), and take the
    settled score of the hand for ``observer`` (a seat, or one per position): float64
    [N], and the number of the agent's decisions."""
    n = len(positions)
    observer = np.broadcast_to(np.asarray(observer, dtype=np.int64), (n,))
    values = np.zeros(n)
    decisions = 0
    for lo in range(0, n, MAX_SLOTS):
        hi = min(n, lo + MAX_SLOTS)
        vec = VectorBarbu(hi - lo, rules=rules, seed=0, copy=False)
        start = vec.load(positions[lo:hi])
        played = play(vec, Seated.everywhere(agent, hi - lo), start, until="hand", first=first_actions[lo:hi])
        values[lo:hi] = played.scores[np.arange(hi - lo), observer[lo:hi]]
        decisions += played.decisions - (hi - lo)  # the first actions were not the agent's
    return values, decisions


def _contract_baselines(rules: Rules, agent: Agent) -> np.ndarray:
    """The declarer's mean settled score per contract over ``BASELINE_DEALS`` random first
    hands, each contract on the same deals."""
    vec = VectorBarbu(BASELINE_DEALS, rules=rules, seed=BASELINE_SEED)
    vec.reset()
    start = vec.positions()
    declarers = start.ints[:, F_DECLARER]
    positions = Positions.concatenate([start] * NUM_CONTRACTS)
    first = np.repeat(DECLARE_OFFSET + np.arange(NUM_CONTRACTS), BASELINE_DEALS)
    values, _ = rollout_values(positions, first, rules, agent, observer=np.tile(declarers, NUM_CONTRACTS))
    return values.reshape(NUM_CONTRACTS, BASELINE_DEALS).mean(axis=1)
