"""Rollouts for the trainer: who plays each seat, whole games on the batched engine, per-seat GAE.

Read top to bottom: the ``Rollout`` a collection returns, GAE along each seat's own
decisions, the opponent plan, then the ``Collector`` that plays the games.

Per-seat bookkeeping: a seat's transition runs from one of its decisions to its next
decision (or the end of the game); its reward is the sum of its own settled hand scores
in between, times ``reward_scale`` — the rule of ``barbu_env.game.credit``, which the
Gymnasium and RLlib environments follow too. Forced decisions (a single legal action)
are played without asking anyone and are not transitions (``skip_forced``). Advantages
are computed by GAE along each seat's own sequence of transitions (Schulman et al.
2016, eq. 16), never across seats. Rollouts are whole games, or whole episodes of the
``episode`` mode (the first 7 hands, the first hand), which end as terminal: no sequence
is cut.

Opponents: each game of a rollout is, by the weights ``opp_self`` / ``opp_pool`` /
``opp_baselines``, either pure self-play (all four seats learn), or one or two learning
seats against a past snapshot of the policy (a sampling ``PolicyAgent``), or against
baseline agents (names from the agent registry). The games are played by the batched
play driver (``barbu_env.game.driver.play``); the opponents are asked through its ``Seated``
(one call per opponent, or per group sharing a ``batch_key``, per step).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from barbu_env.util.extras import needs

with needs("train", "barbu_training.rollout"):  # one line if the extra is missing
    import torch

from barbu_env.agents import Agent, ask, make_agent
from barbu_env.agents.registry import agent_takes, parse_agents
from barbu_env.game.actions import NUM_ACTIONS
from barbu_env.game.constants import NUM_HANDS, NUM_PLAYERS
from barbu_env.game.credit import NO_DECISION, SeatCredit
from barbu_env.game.driver import EngineStep, Seated, play
from barbu_env.game.engine import episode_hands
from barbu_env.game.observation import OBS_DIM, PRIVILEGED_DIM
from barbu_env.game.vector import VectorBarbu
from barbu_models.policy import BarbuActorCritic, MaskedCategorical
from barbu_training.config import Args, model_config
from barbu_training.policy_agent import PolicyAgent
from barbu_training.precision import autocast

GAME_KINDS = ("self", "pool", "agent")  # self-play, against a pool snapshot, against baselines
DECISIONS_PER_GAME = 1400  # a little more than the unforced decisions of a game (about 1,210): the buffers' start
#: Seconds between two calls of ``Collector.collect``'s ``progress`` (a bar or a line, not a cost).
PROGRESS_SECONDS = 0.5


@dataclass
class Rollout:
    """One rollout's transitions (learning seats only) and its games' summary."""

    obs: np.ndarray  # [T, OBS_DIM] float32
    states: np.ndarray | None  # [T, PRIVILEGED_DIM] float32 with a privileged critic
    masks: np.ndarray  # [T, 85] bool
    actions: np.ndarray  # [T] int64
    logprobs: np.ndarray  # [T] float32
    values: np.ndarray  # [T] float32
    advantages: np.ndarray  # [T] float32
    returns: np.ndarray  # [T] float32
    rewards: np.ndarray  # [T] float64: the seat's scores settled until its next decision, times reward_scale
    dones: np.ndarray  # [T] bool: the game ended before the seat's next decision
    game_ids: np.ndarray  # [T] int32: which game of the rollout
    seats: np.ndarray  # [T] int8: which seat decided
    final_scores: np.ndarray  # [games, 4] every game's final scores
    learning: np.ndarray  # [games, 4] bool: the seats the policy played
    kinds: np.ndarray  # [games] index into GAME_KINDS
    decisions: int  # every decision played, opponents' too

    @property
    def learner_scores(self) -> list[float]:
        """The final score of each learning seat."""
        return self.final_scores[self.learning].astype(float).tolist()

    @property
    def kind_scores(self) -> dict[str, list[float]]:
        """The learning seats' final scores by game kind (present kinds only)."""
        return {
            name: self.final_scores[self.learning & (self.kinds == k)[:, None]].astype(float).tolist()
            for k, name in enumerate(GAME_KINDS)
            if (self.kinds == k).any()
        }


# ---------------------------------------------------------------------- GAE


def per_seat_gae(rewards, values, dones, next_index, gamma: float, lam: float) -> np.ndarray:
    """GAE along each seat's own decisions: ``next_index[t]`` is the index of the same
    seat's next transition (ignored where ``dones[t]``); transitions are in time order, so
    a backward pass sees every successor first.

    >>> per_seat_gae(np.array([0., 1., 2.]), np.zeros(3), np.array([False, True, True]),
    ...              np.array([1, -1, -1]), gamma=0.5, lam=1.0).tolist()
    [0.5, 1.0, 2.0]
    """
    return _per_seat_gae(
        np.asarray(rewards, dtype=np.float64),
        np.asarray(values, dtype=np.float64),
        np.asarray(dones, dtype=np.bool_),
        np.asarray(next_index, dtype=np.int64),
        float(gamma),
        float(lam),
    )


@numba.njit(cache=True)
def _per_seat_gae(rewards, values, dones, next_index, gamma, lam):  # compiled: a rollout has ~10^5-10^6 transitions
    adv = np.zeros(len(rewards), dtype=np.float64)
    for t in range(len(rewards) - 1, -1, -1):
        if dones[t]:
            adv[t] = rewards[t] - values[t]
        else:
            n = next_index[t]
            adv[t] = rewards[t] + gamma * values[n] - values[t] + gamma * lam * adv[n]
    return adv


# ---------------------------------------------------------------------- seeds


def rollout_generators(seed: int, iteration: int, share: int = 0) -> tuple[np.random.Generator, torch.Generator]:
    """The generators of share ``share`` of iteration ``iteration``'s rollout: the plan,
    deals and opponents' draws (numpy) and the policy's samples (torch). Share 0 is the
    in-process rollout's, ``[seed, iteration]``; the other shares of a run with rollout
    workers (``barbu_training.workers``) add their index, ``[seed, iteration, share]``."""
    key = [seed, iteration] + ([share] if share else [])
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence(key).generate_state(1)[0]))
    return np.random.default_rng(key), gen


# ---------------------------------------------------------------------- who plays


def opponent_plan(
    args: Args, rng: np.random.Generator, num_games: int, num_baselines: int, num_snapshots: int, teacher: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Who plays each seat of each game of a rollout, by the weights ``opp_self`` /
    ``opp_pool`` / ``opp_baselines`` (a teacher's games are all self-play): ``kinds`` [G]
    (indices into ``GAME_KINDS``), ``learning`` [G, 4] (the learning seats: all four in
    self-play, else ``opp_learners``: one or two, or either at random) and ``opponent``
    [G, 4], each other seat's index into the opponents, the baselines then the pool
    snapshots (-1 for a learning seat): a baseline game draws a baseline per seat, a pool
    game one snapshot for all its other seats."""
    weights = np.array(
        [args.opp_self, args.opp_pool if num_snapshots else 0.0, args.opp_baselines if num_baselines else 0.0]
    )
    if teacher:
        weights = np.array([1.0, 0.0, 0.0])
    kinds = rng.choice(len(GAME_KINDS), size=num_games, p=weights / weights.sum())
    learning = np.ones((num_games, NUM_PLAYERS), dtype=bool)
    opponent = np.full((num_games, NUM_PLAYERS), -1, dtype=np.int64)
    for i in np.flatnonzero(kinds):
        count = args.opp_learners or int(rng.integers(1, 3))  # a fixed count draws nothing
        learners = rng.choice(NUM_PLAYERS, count, replace=False)
        learning[i] = False
        learning[i, learners] = True
        if GAME_KINDS[kinds[i]] == "pool":
            opponent[i, ~learning[i]] = num_baselines + int(rng.integers(num_snapshots))
        else:
            opponent[i, ~learning[i]] = rng.integers(num_baselines, size=NUM_PLAYERS - len(learners))
    return kinds, learning, opponent


# ---------------------------------------------------------------------- the collector


def buffer_fields(central_critic: bool) -> dict[str, tuple[type, tuple[int, ...]]]:
    """The collector's transition buffers: name -> (dtype, shape of one transition's)."""
    fields = {
        "obs": (np.float32, (OBS_DIM,)),
        "masks": (bool, (NUM_ACTIONS,)),
        "actions": (np.int64, ()),
        "logprobs": (np.float32, ()),
        "values": (np.float32, ()),
        "rewards": (np.float64, ()),
        "dones": (bool, ()),
        "next_index": (np.int64, ()),
        "game_ids": (np.int32, ()),
        "seats": (np.int8, ()),
    }
    if central_critic:
        fields["states"] = (np.float32, (PRIVILEGED_DIM,))
    return fields


def initial_capacity(args: Args) -> int:
    """Transitions the buffers start with: about ``num_games`` episodes of four learning seats."""
    return args.num_games * -(-DECISIONS_PER_GAME * episode_hands(args.episode) // NUM_HANDS)


def buffer_bytes(args: Args) -> int:
    """Bytes of the transition buffers a run starts with (about 6.5 MB a whole game, 14 MB
    with a privileged critic)."""
    row = sum(np.dtype(dt).itemsize * int(np.prod(shape)) for dt, shape in buffer_fields(args.central_critic).values())
    return initial_capacity(args) * row


class Collector:
    """Rollouts on the batched engine: ``num_games`` whole games (episodes) in lockstep in this process.

    Each step asks every live game's seat to act at once, grouped by who plays it: the
    learning policy (one batched forward pass on its device: the step's observations and
    masks copied there once, its actions, log-probabilities and values back in one copy;
    on ``torch_threads`` threads on the CPU), then each opponent (a baseline or a pool
    snapshot, its network on the policy's device, through the driver's ``Seated``); forced decisions
    (``skip_forced``) and games already over take their first legal action without
    asking anyone. The learning seats' transitions go straight into buffers kept from
    one rollout to the next; their rewards are credited by ``barbu_env.game.credit.SeatCredit``."""

    def __init__(self, args: Args, rules, capacity: int = 0, dtype: torch.dtype = torch.float32):
        """``capacity``: transitions the buffers hold before they grow (default: about
        ``num_games`` whole episodes of four learning seats). ``dtype``: the learning
        policy's matrix products (``barbu_training.precision``; the update's, so that the
        stored log-probabilities are the ones the update recomputes)."""
        self.args = args
        self.dtype = dtype
        self.rules = rules
        self.env = VectorBarbu(args.num_games, rules, seed=args.seed, copy=False, episode=args.episode)
        self.baseline_names = parse_agents(args.baselines)  # built afresh for each rollout
        self.snapshot_models: dict[int, BarbuActorCritic] = {}  # pool id -> its network, built once
        self.buf: dict[str, np.ndarray] = {}
        self._grow(capacity or initial_capacity(args))

    def _grow(self, capacity: int) -> None:
        """Allocate larger transition buffers, keeping what they hold."""
        old = self.buf
        fields = buffer_fields(self.args.central_critic)
        self.buf = {k: np.empty((capacity, *shape), dtype=dt) for k, (dt, shape) in fields.items()}
        for k, a in old.items():
            self.buf[k][: len(a)] = a

    @property
    def capacity(self) -> int:
        """Transitions the buffers hold."""
        return len(self.buf["actions"])

    def snapshot_agents(
        self, pool: dict[int, dict], rng: np.random.Generator, device: torch.device | str = "cpu"
    ) -> list[PolicyAgent]:
        """The pool's snapshots (id -> state dict) as sampling agents, seeded from ``rng``,
        in the pool's order, their networks built on ``device`` (the learning policy's);
        networks of snapshots gone from the pool are forgotten."""
        for sid in [s for s in self.snapshot_models if s not in pool]:
            del self.snapshot_models[sid]
        agents = []
        for sid, state_dict in pool.items():
            if sid not in self.snapshot_models:
                self.snapshot_models[sid] = BarbuActorCritic(model_config(self.args)).to(device)
                self.snapshot_models[sid].load_state_dict(state_dict)
                self.snapshot_models[sid].eval()
            agents.append(
                PolicyAgent(
                    self.snapshot_models[sid],
                    seed=int(rng.integers(2**63)),
                    deterministic=False,
                    name=f"snapshot_{sid}",
                )
            )
        return agents

    def _make(self, spec: str, seed: int, device: torch.device) -> Agent:
        """A baseline or teacher by its spec, on ``device`` if it takes one (a trained
        checkpoint, pimc with a checkpoint rollout policy) and its spec names none."""
        placed = {"device": str(device)} if agent_takes(spec, "device") else {}
        return make_agent(spec, seed=seed, rules=self.rules, **placed)

    def collect(
        self,
        model: BarbuActorCritic,
        pool: dict[int, dict],
        rng: np.random.Generator,
        torch_gen: torch.Generator,
        teacher: str = "",
        progress: Callable[[int], object] | None = None,
    ) -> Rollout:
        """Play ``num_games`` whole games and return the learning seats' transitions.

        The policy samples with ``torch_gen``; everything else random (the plan, the
        deals, the opponents' seeds) comes from ``rng``: the rollout depends on these two,
        the model and the pool alone. With a ``teacher`` (an agent
        name) every seat of every game is played by that agent instead, for imitation:
        the actions are the teacher's, ``logprobs`` and ``values`` are 0 and ``returns``
        are the seats' discounted Monte Carlo returns. ``progress(decisions)``: called
        with the rollout's decisions so far (every decision, as ``Rollout.decisions`` counts
        them) after its first step, then at most every ``PROGRESS_SECONDS``."""
        args, env, B = self.args, self.env, self.args.num_games
        # --- who plays each seat of each game ---
        device = next(model.parameters()).device  # the opponents' networks go there too
        teacher_agent = self._make(teacher, int(rng.integers(2**31)), device) if teacher else None
        # seeded from rng, like everything else: a rollout depends on its rng alone, not on earlier rollouts
        baselines = [self._make(b, int(rng.integers(2**31)), device) for b in self.baseline_names]
        snapshots = self.snapshot_agents(pool, rng, device)
        opponents: list[Agent] = [*baselines, *snapshots]
        kinds, learning, opponent = opponent_plan(
            args, rng, B, len(baselines), len(snapshots), teacher=teacher_agent is not None
        )

        # --- play every game to its end (barbu_env.game.driver.play) ---
        credit = SeatCredit(B)  # each seat's rewards since its latest transition (ids: buffer rows)
        seated = Seated(opponents, np.maximum(opponent, 0)) if opponents else None  # asked for their seats only
        filled = [0]  # transitions written so far

        def decide(rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, seats: np.ndarray) -> np.ndarray:
            actions = np.empty(len(rows), dtype=np.int64)
            mine = learning[rows, seats]
            # the learning policy (or the teacher it imitates): new transitions T .. T + n
            k = np.flatnonzero(mine)
            if len(k):
                T = filled[0]
                actions[k] = self._learner_step(model, torch_gen, teacher_agent, T, rows[k], obs, masks, seats, k)
                t_new = np.arange(T, T + len(k))
                closed, owed = credit.decide(rows[k], seats[k], t_new)  # each seat's previous transition
                had = closed != NO_DECISION
                self.buf["rewards"][closed[had]] = owed[had]
                self.buf["next_index"][closed[had]] = t_new[had]
                filled[0] = T + len(k)
            # the opponents: baselines and pool snapshots, grouped by who they are
            j = np.flatnonzero(~mine)
            if len(j):
                actions[j] = seated(rows[j], obs[j], masks[j], seats[j])
            return actions

        shown = [0, 0.0]  # decisions so far, when progress is next due

        def after(step: EngineStep) -> None:
            if progress is not None:
                shown[0] += np.count_nonzero(step.live)  # play()'s count: the games live before the step
                if time.monotonic() >= shown[1]:
                    shown[1] = time.monotonic() + PROGRESS_SECONDS
                    progress(shown[0])
            # hand scores go to each seat's latest transition; a game's end closes all four
            credit.add(step.rewards * args.reward_scale)
            if len(step.ended):
                last, owed = credit.end(step.ended)
                was = last != NO_DECISION
                self.buf["rewards"][last[was]] = owed[was]
                self.buf["dones"][last[was]] = True

        start = env.reset(seed=int(rng.integers(2**63)))
        played = play(env, decide, start, ask_forced=not args.skip_forced, on_step=after)
        T, final_scores, decisions = filled[0], played.scores.astype(np.int64), played.decisions

        # --- advantages along each seat's own decisions ---
        buf = {k: a[:T] for k, a in self.buf.items()}
        lam = 1.0 if teacher_agent is not None else args.gae_lambda  # a teacher's values are 0: Monte Carlo returns
        adv = per_seat_gae(buf["rewards"], buf["values"], buf["dones"], buf["next_index"], args.gamma, lam)
        return Rollout(
            obs=buf["obs"],
            states=buf.get("states"),
            masks=buf["masks"],
            actions=buf["actions"],
            logprobs=buf["logprobs"],
            values=buf["values"],
            advantages=adv.astype(np.float32),
            returns=(adv + buf["values"]).astype(np.float32),
            rewards=buf["rewards"],
            dones=buf["dones"],
            game_ids=buf["game_ids"],
            seats=buf["seats"],
            final_scores=final_scores,
            learning=learning,
            kinds=kinds,
            decisions=decisions,
        )

    def _learner_step(
        self,
        model: BarbuActorCritic,
        torch_gen: torch.Generator,
        teacher: Agent | None,
        T: int,
        games: np.ndarray,
        obs: np.ndarray,
        masks: np.ndarray,
        seats: np.ndarray,
        k: np.ndarray,
    ) -> np.ndarray:
        """The learning seats' decisions, rows ``k`` of a step's asked ``obs`` / ``masks``
        / ``seats`` (games ``games``): written to the buffers as transitions ``T .. T + n``
        (open: no reward yet, no successor), their actions returned."""
        n = len(k)
        if T + n > self.capacity:
            self._grow(int(self.capacity * 1.5) + n)
        buf, new = self.buf, slice(T, T + n)
        o, m = buf["obs"][new], buf["masks"][new]
        np.take(obs, k, axis=0, out=o)
        np.take(masks.view(bool), k, axis=0, out=m)
        if self.args.central_critic:  # the privileged view, for the teacher's games too (the warm start's critic)
            st = buf["states"][new]
            st[:, :OBS_DIM] = o
            st[:, OBS_DIM:] = self.env.other_hands()[games]
        if teacher is not None:
            a = ask(teacher, o, m.view(np.int8))
            buf["logprobs"][new] = 0.0
            buf["values"][new] = 0.0
        else:
            device = next(model.parameters()).device  # the policy's: inputs go there once, results come back once
            states = torch.from_numpy(st).to(device) if self.args.central_critic else None
            with torch.no_grad():
                with autocast(self.dtype, device):
                    logits, values = model(torch.from_numpy(o).to(device), states)
                logits, values = logits.float(), values.float()
                dist = MaskedCategorical(logits, torch.from_numpy(m).to(device))
                a_t = dist.sample(torch_gen)
                # log-probabilities, values and actions (ids < 85: exact as floats) in one copy to the host
                step = torch.stack((dist.log_prob(a_t), values, a_t.float())).cpu().numpy()
            buf["logprobs"][new], buf["values"][new] = step[0], step[1]
            a = step[2].astype(np.int64)
        buf["actions"][new] = a
        buf["rewards"][new] = 0.0
        buf["dones"][new] = False
        buf["next_index"][new] = NO_DECISION
        buf["game_ids"][new] = games
        buf["seats"][new] = seats[k]
        return a
