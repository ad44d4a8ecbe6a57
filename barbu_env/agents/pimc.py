"""``pimc``: Perfect-Information Monte Carlo search on the batched engine (docs/agents.md).

At each decision with more than one legal action, the agent rebuilds the position its
observation shows (``Positions.from_observation``; it never sees the environment), samples
``worlds`` deals of the hidden cards, uniformly among those consistent with everything
public (``barbu_env.game.worlds``) or, with ``worlds_from=belief``, in proportion to the
belief network's guess (``barbu_env.agents.belief``), plays every legal action in every
world and then the rest of the hand with the rollout policy at all four seats (all worlds
x actions of all the games it decides stepping together in one ``VectorBarbu``), and takes
the action with the best mean settled score of the hand for itself (the same worlds for
every action; ties go to the lowest action id). Every kind of decision is searched so. A
rollout ends with the hand, so a contract is valued by its result on this hand less what
it scores on an average hand (``baseline``, measured once per rules and rollout policy by
the same rollouts over random deals).

What PIMC does not do (it assumes the others play like its rollout policy, and that it
will know every hidden card from its next decision on): docs/agents.md. It is
deterministic for a seed (without ``time_limit``).

Parameters (``make_agent("pimc", worlds=32)`` or ``"pimc:worlds=32,rollout=random"`` on
the command line): ``worlds`` sampled deals per decision (default 32), ``rollout`` the
rollout policy's agent spec (a registered name or a checkpoint path), ``time_limit``
seconds per decision (worlds are then searched in rounds of up to 8 until the limit or
``worlds`` is reached; results then depend on the machine), ``baseline`` whether
contract choices subtract the contract's average (default true), ``device`` where a
rollout policy that takes one (a trained checkpoint) computes (its own default, the CPU,
unless given: ``"pimc:rollout=runs/x/best.pt,device=cuda"``; ``barbu eval --device``
sets it), ``worlds_from`` where the hidden hands are drawn from (``uniform``, the default;
``belief``, the shipped belief network, which needs torch; or a belief checkpoint's path:
the name gains ``-belief``), ``seed``. ``worlds`` at least 1, ``time_limit`` above 0,
``cover`` and ``certain`` above 0 and at most 1 are checked when the agent is made, before
anything is built; a search holds at most ``ROUND_SLOTS`` rollout games at once, whatever
its worlds.

The guided search, ``pimc-ppo`` (``guided_pimc``), adds a *prior*: a trained policy
(``prior``; ``pimc-ppo`` uses its rollout policy, ``ppo-finetuned`` by default). A
decision whose most likely legal action has probability ``certain`` (0.95) or more is
answered by the prior without search (``certain=1`` searches every decision); the
others search only the prior's most likely actions until together they have ``cover``
(0.95) of its probability, and at least two (``prior_actions``), except the declarer's
contract, trump and Domino rank (``FULL_SEARCH_PHASES``), searched in full. One prior
call per step answers every game's decision. ``search`` returns the searched actions and
their values for each row.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np

from ..game._kernels import F_DECLARER
from ..game.actions import DECLARE_OFFSET
from ..game.constants import NUM_CONTRACTS, Phase
from ..game.driver import Seated, play
from ..game.observation import OFFSETS
from ..game.position import Positions
from ..game.rules import Rules, load_rules
from ..game.vector import VectorBarbu
from ..game.worlds import sample_worlds
from ..util.files import is_file, quote
from .base import Agent
from .belief import SHIPPED, UNIFORM, load_model, samplers
from .registry import agent_takes, make_agent, register

#: Worlds per decision by default (the README's strength and speed table chose it).
DEFAULT_WORLDS = 32
#: Slots stepped together at most: larger searches are played in several batches.
MAX_SLOTS = 8192
#: Worlds per round when a time limit applies.
ROUND_WORLDS = 8
#: Rollout games held at once by a search: a round with more worlds x actions is played in parts.
ROUND_SLOTS = 65_536
#: Random deals per contract for the contract baselines, and their seed.
BASELINE_DEALS = 512
BASELINE_SEED = 20261130
_PHASE_AT = OFFSETS["phase"][0]
#: The guided search's defaults (``prior``): the actions searched are the prior's most
#: likely ones covering ``DEFAULT_COVER`` of its probability (at least two), and a
#: decision whose most likely action has ``DEFAULT_CERTAIN`` or more is answered unsearched.
DEFAULT_COVER = 0.95
DEFAULT_CERTAIN = 0.95
#: Agent names that are searches (never a rollout policy or a prior).
_SEARCHES = ("pimc", "pimc-ppo")


#: Decisions the guided search (``prior``) searches in full whatever the prior says: the
#: declarer's choices, once per hand each, where the shipped networks trail ``pimc``.
FULL_SEARCH_PHASES = (Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK)


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
        prior: str | None = None,
        cover: float = DEFAULT_COVER,
        certain: float = DEFAULT_CERTAIN,
        worlds_from: str = UNIFORM,
    ):
        if worlds < 1 or (time_limit is not None and time_limit <= 0) or not (0 < cover <= 1 and 0 < certain <= 1):
            raise ValueError("pimc: worlds must be at least 1, time_limit above 0, cover and certain in (0, 1]")
        if not isinstance(rollout, str) or rollout.split(":")[0] in _SEARCHES:
            raise ValueError(f"pimc: rollout must be another agent's spec, not {quote(rollout)}")
        if prior is not None and (not isinstance(prior, str) or prior.split(":")[0] in _SEARCHES):
            raise ValueError(f"pimc: prior must be a trained policy's spec, not {quote(prior)}")
        worlds_from = str(worlds_from) if isinstance(worlds_from, Path) else worlds_from
        self.belief_model = _belief_model(worlds_from)  # the network loaded once, before any search
        self.worlds_from = worlds_from
        self.rules = load_rules(rules)
        self.worlds = worlds
        self.rollout = rollout
        self.time_limit = time_limit
        self.baseline = bool(baseline)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        placed = {"device": device} if device is not None and agent_takes(rollout, "device") else {}
        self.rollout_agent: Agent = make_agent(rollout, seed=seed, rules=self.rules, **placed)
        self.prior, self.cover, self.certain = prior, float(cover), float(certain)
        self.prior_agent: Agent | None = None
        if prior is not None:
            placed = {"device": device} if device is not None and agent_takes(prior, "device") else {}
            self.prior_agent = make_agent(prior, seed=seed, rules=self.rules, **placed)
            if not hasattr(self.prior_agent, "probs_batch"):
                raise ValueError(
                    f"pimc: the prior {quote(prior)} gives no action probabilities (a trained policy does)"
                )
        self.name = "pimc" if (worlds, rollout) == (DEFAULT_WORLDS, "heuristic") else f"pimc{worlds}-{rollout}"
        self.name += "" if prior is None else "-prior"
        self.name += _belief_suffix(worlds_from)
        self.batch_key: Hashable = (
            "pimc",
            self.rules,
            worlds,
            rollout,
            time_limit,
            self.baseline,
            device,
            prior,
            self.cover,
            self.certain,
            worlds_from,
        )
        #: Rollout decisions taken by this instance's searches (for the benchmark).
        self.rollout_decisions = 0
        #: Decisions with a choice answered by the prior without search (``certain``), and searched.
        self.certain_answers = 0
        self.searched = 0

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[PimcAgent] | None = None
    ) -> np.ndarray:
        """Row i's action, searched by ``instances[i]`` (by default this agent for every
        row): every row's search in one batch; the best searched action (ties: the lowest
        id), or the prior's most likely action where it is at least ``certain``."""
        masks = np.asarray(masks).astype(bool)
        actions = masks.argmax(axis=1).astype(np.int64)  # the forced ones are done
        for i, (legal, value) in self.search(observations, masks, instances).items():
            actions[i] = legal[int(np.argmax(value))]
        return actions

    def search(
        self,
        observations: np.ndarray,
        masks: np.ndarray,
        instances: Sequence[PimcAgent] | None = None,
        prune: bool = True,
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The searched rows' action values: row -> (actions searched, int64 [k]; their
        values, float64 [k]: the mean settled score of the hand for the player to act,
        less the contract's baseline when choosing a contract). Rows with one legal action
        are left out; with a prior (and ``prune``), so are rows whose most likely action
        has probability ``certain`` or more (answered as ``(that action,), (0.0,)``;
        ``certain=1`` searches them all), and the other rows search only the prior's top
        actions (``prior_actions``) but for the declarer's choices (``FULL_SEARCH_PHASES``)."""
        lead = self
        observations = np.asarray(observations, dtype=np.float32)
        instances = [self] * len(observations) if instances is None else instances
        masks = np.asarray(masks).astype(bool)
        rows = [i for i in range(len(instances)) if masks[i].sum() > 1]
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if not rows:
            return out
        legal = {i: np.flatnonzero(masks[i]) for i in rows}
        if lead.prior_agent is not None and prune:
            probs = lead.prior_agent.probs_batch(observations[rows], masks[rows])
            for i, p in zip(list(rows), probs):
                top = int(np.argmax(p))
                if lead.certain < 1 and p[top] >= lead.certain:
                    out[i] = (np.array([top]), np.zeros(1))
                    rows.remove(i)
                    instances[i].certain_answers += 1
                elif not any(observations[i][_PHASE_AT + phase] > 0.5 for phase in FULL_SEARCH_PHASES):
                    legal[i] = prior_actions(p, legal[i], lead.cover)
        for i in rows:
            instances[i].searched += 1
        if not rows:
            return out
        bases = {i: Positions.from_observation(observations[i], lead.rules) for i in rows}
        totals = {i: np.zeros(len(legal[i])) for i in rows}
        done = 0
        start = time.perf_counter()
        # Worlds x actions of every row are rolled out together, in parts of at most
        # ROUND_SLOTS games: memory stays bounded whatever worlds and rows there are.
        per_world = sum(len(legal[i]) for i in rows)
        # worlds_from: the belief network is asked once for every row, its fit kept for every round
        drawers = (
            None if lead.belief_model is None else dict(zip(rows, samplers(observations[rows], lead.belief_model)))
        )
        while done < lead.worlds:
            n = lead.worlds - done if lead.time_limit is None else min(ROUND_WORLDS, lead.worlds - done)
            hidden = {}
            for i in rows:
                if drawers is not None:
                    hidden[i] = drawers[i].draw(n, instances[i].rng)
                else:
                    base = bases[i]
                    hidden[i] = sample_worlds(
                        int(base.unknown_cards[0]), base.sizes[0, 1:], base.excluded[0, 1:], n, instances[i].rng
                    )
            part = max(1, ROUND_SLOTS // per_world)
            for lo in range(0, n, part):
                m = min(n, lo + part) - lo
                worlds, first = [], []
                for i in rows:
                    dealt = bases[i].with_hidden(hidden[i][lo : lo + m], check=False)
                    for a in legal[i]:
                        worlds.append(dealt)
                        first.append(np.full(m, a))
                values, decisions = rollout_values(
                    Positions.concatenate(worlds), np.concatenate(first), lead.rules, lead.rollout_agent, observer=0
                )
                lead.rollout_decisions += decisions
                at = 0
                for i in rows:
                    k = len(legal[i])
                    totals[i] += values[at : at + k * m].reshape(k, m).sum(axis=1)
                    at += k * m
            done += n
            if lead.time_limit is not None and time.perf_counter() - start > lead.time_limit:
                break
        for i in rows:
            value = totals[i] / done
            if lead.baseline and observations[i][_PHASE_AT + Phase.DECLARE] > 0.5:
                value = value - lead.contract_baselines()[legal[i] - DECLARE_OFFSET]
            out[i] = (legal[i], value)
        return out

    def contract_baselines(self) -> np.ndarray:
        """Mean settled score of the declarer per contract, float [7], on random deals
        (the first hand of a game) played out by the rollout policy; cached per rules and
        rollout policy."""
        key = (self.rules, self.rollout)
        if key not in self._baselines:
            self._baselines[key] = _contract_baselines(self.rules, self.rollout_agent)
        return self._baselines[key]


#: The shipped policy the guided search uses as its rollout policy and prior by default.
GUIDE = "ppo-finetuned"


@register("pimc-ppo")
def guided_pimc(
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    worlds: int = DEFAULT_WORLDS,
    rollout: str = GUIDE,
    prior: str | None = None,
    cover: float = DEFAULT_COVER,
    certain: float = DEFAULT_CERTAIN,
    time_limit: float | None = None,
    baseline: bool = True,
    device: str | None = None,
    worlds_from: str = UNIFORM,
) -> PimcAgent:
    """``pimc-ppo``: the search guided by a trained policy — ``rollout`` (``ppo-finetuned``
    by default) plays every seat of every rollout and is the prior (``prior``, the
    rollout policy unless given) that answers near-certain decisions and chooses the
    actions searched (see the module docstring)."""
    agent = PimcAgent(
        seed=seed,
        rules=rules,
        worlds=worlds,
        rollout=rollout,
        time_limit=time_limit,
        baseline=baseline,
        device=device,
        prior=rollout if prior is None else prior,
        cover=cover,
        certain=certain,
        worlds_from=worlds_from,
    )
    defaults = (worlds, rollout, prior, cover, certain) == (DEFAULT_WORLDS, GUIDE, None, DEFAULT_COVER, DEFAULT_CERTAIN)
    agent.name = "pimc-ppo" if defaults else f"pimc-ppo{worlds}-{rollout}"
    agent.name += _belief_suffix(agent.worlds_from)
    return agent


def _belief_model(worlds_from: str):
    """The belief network ``worlds_from`` names (None for ``"uniform"``): ``"belief"`` the
    shipped one, else a checkpoint of ``python -m barbu_training.belief`` (ValueError in one
    line if the file is not one)."""
    if not isinstance(worlds_from, str) or worlds_from not in (UNIFORM, SHIPPED) and not is_file(worlds_from):
        raise ValueError(
            f"pimc: worlds_from must be 'uniform', 'belief' or a belief network's checkpoint file, "
            f"not {quote(worlds_from, 200)}"
        )
    return None if worlds_from == UNIFORM else load_model(worlds_from)


def _belief_suffix(worlds_from: str) -> str:
    """What ``worlds_from`` adds to the agent's name: nothing, ``-belief`` (the shipped
    network) or ``-belief-<file stem>``."""
    if worlds_from == UNIFORM:
        return ""
    return "-belief" if worlds_from == SHIPPED else f"-belief-{Path(worlds_from).stem}"


def prior_actions(probs: np.ndarray, legal: np.ndarray, cover: float) -> np.ndarray:
    """The legal actions (``legal``: their ids) a prior's probabilities (float [85]) leave
    to search: the most likely ones until together they have at least ``cover`` of the
    probability, and at least two (ascending ids).

    >>> p = np.zeros(85); p[[3, 7, 9, 20]] = [0.6, 0.3, 0.06, 0.04]
    >>> legal = np.array([3, 7, 9, 20, 30])
    >>> [prior_actions(p, legal, c).tolist() for c in (0.9, 0.95, 0.5, 1.0)]
    [[3, 7], [3, 7, 9], [3, 7], [3, 7, 9, 20]]
    """
    order = legal[np.argsort(-probs[legal], kind="stable")]
    k = int(np.searchsorted(np.cumsum(probs[order]), cover - 1e-9)) + 1
    return np.sort(order[: max(k, 2)])


def rollout_values(
    positions: Positions,
    first_actions: np.ndarray,
    rules: Rules,
    agent: Agent,
    observer: int | np.ndarray = 0,
) -> tuple[np.ndarray, int]:
    """For each position: apply ``first_actions[k]``, play the rest of the hand with
    ``agent`` at every seat (``barbu_env.game.driver.play``, ``until="hand"``), and take the
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
