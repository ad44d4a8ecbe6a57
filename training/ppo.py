"""Self-play PPO for Barbu, one shared masked policy for all four seats.

Read top to bottom: the arguments, the rollouts (many games stepping together, batched
policy inference, per-seat bookkeeping, GAE), then the training loop (PPO update,
opponents pool, periodic duplicate evaluation, TensorBoard, checkpoints) and the end of
the run (final evaluation table, learning curve, best checkpoint).

Two rollout engines play the same games by the same rules (``rollout_engine``):
``vector`` (the default), the batched engine ``barbu_env.vector.VectorBarbu`` stepping
``num_games`` games in lockstep in the learner process, each step one network call for
every game whose learning seat is to act; and ``aec``, per-game engine states in worker
processes (``num_workers`` x ``games_per_worker`` games), the slower reference path.
``python -m training.bench_training`` measures both in one run.

Per-seat bookkeeping: a seat's transition runs from one of its decisions to its next
decision (or the end of the game); its reward is the sum of its own settled hand
scores in between, times ``reward_scale``. Forced decisions (a single legal action) are
played without asking the policy and are not transitions (``skip_forced``). Advantages are computed by GAE along each
seat's own sequence of decisions (Schulman et al. 2016, eq. 16), never across seats.
Rollouts are whole games, so no sequence is cut.

Opponents: each game of a rollout is, by the weights ``opp_self`` / ``opp_pool`` /
``opp_baselines``, either pure self-play (all four seats learn), or one or two learning
seats against a past snapshot of the policy, or against baseline agents (names from
the agent registry).

Warm start (optional, ``bc_iterations``): the first iterations play whole games of a
teacher agent (``heuristic`` by default) in every seat, and train the policy to pick the
teacher's actions (masked cross-entropy) and the value head to predict the discounted
returns; PPO then improves on the teacher by self-play. With ``bc_iterations: 0`` the
policy learns from scratch.

Privileged critic (optional, ``central_critic``): the value network also reads the other
three hands (``ObservationEncoder.privileged``); the policy never does.

Run: ``barbu train --config configs/train/quick.yaml`` (any field can be overridden:
``--seed 3 --total-decisions 2000000``), or ``python -m training.ppo ...``. A fresh run
replaces the logs and checkpoints of an earlier run of the same name.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
import torch
import yaml

from barbu_env.aec import mask_array
from barbu_env.engine import NUM_PLAYERS, BarbuState
from barbu_env.observation import OBS_DIM, PRIVILEGED_DIM, ObservationEncoder
from barbu_env.rules import load_rules
from models.policy import BarbuActorCritic, MaskedCategorical, PolicyConfig, load_checkpoint, save_checkpoint


@dataclass
class Args:
    # --- run ---
    exp_name: str = "barbu_ppo"
    """Name of the run; its folder is ``run_dir/exp_name``."""
    run_dir: str = "runs"
    """Where run folders go."""
    seed: int = 1
    """Seed of everything (deals, sampling, initial weights)."""
    rules: str = "standard"
    """Rules preset (or YAML path) the agent trains under."""
    total_decisions: int = 5_000_000
    """Stop after this many environment decisions (all seats, opponents included)."""
    time_budget_minutes: float = 0.0
    """Also stop after this many minutes of training (0: no limit; the learning rate
    anneals over whichever runs out first); the final evaluation comes after."""
    resume: str = ""
    """Checkpoint to resume from (weights, optimizer, counters, snapshot pool)."""

    # --- rollouts ---
    rollout_engine: str = "vector"
    """``vector``: the batched engine (``barbu_env.vector.VectorBarbu``) steps
    ``num_games`` games in lockstep in the learner process, inference on
    ``torch_threads`` threads; ``aec``: per-game engine states in ``num_workers`` worker
    processes of ``games_per_worker`` games each (the slower reference path)."""
    num_games: int = 512
    """Games the batched engine steps together; each rollout plays them to the end, about
    1,570 decisions per game."""
    num_workers: int = 2
    """Rollout processes of the ``aec`` engine (one per core); also the evaluation's
    worker processes."""
    games_per_worker: int = 16
    """Games each ``aec`` worker steps together (the inference batch)."""
    torch_threads: int = 2
    """Threads of the learner process (inference with the ``vector`` engine, the update)."""
    skip_forced: bool = True
    """A decision with a single legal action is played without asking anyone and is not a
    transition: the seat's rewards keep flowing to its previous decision (about 23% of
    decisions are forced: last cards of a suit, doubling turns with no choice)."""

    # --- PPO ---
    learning_rate: float = 3e-4
    """Adam learning rate."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over the run."""
    gamma: float = 0.995
    """Discount per decision of the same seat."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    reward_scale: float = 0.01
    """Factor on the settled hand scores (points) to make rewards."""
    minibatch_size: int = 4096
    """Transitions per gradient step."""
    update_epochs: int = 3
    """Passes over each rollout."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    clip_vloss: bool = False
    """Clip the value loss like the policy ratio."""
    ent_coef: float = 0.01
    """Weight of the (masked) entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    norm_adv: bool = True
    """Normalize advantages per minibatch."""
    target_kl: float = 0.0
    """Stop an update's epochs early past this approximate KL (0: never)."""

    # --- model ---
    hidden: int = 256
    """Trunk width."""
    layers: int = 2
    """Trunk depth."""
    card_embed: int = 32
    """Features per card row."""
    central_critic: bool = False
    """Train with a privileged critic: the value network also sees the other three
    hands (the policy never does; checkpoints act from the observation alone)."""

    # --- warm start ---
    bc_iterations: int = 0
    """Iterations of imitation before PPO: whole games of ``bc_teacher`` in every seat,
    the policy trained to pick its actions and the value head to predict the returns
    (0: start from scratch)."""
    bc_teacher: str = "heuristic"
    """The agent imitated during the warm start (a registered name)."""
    bc_epochs: int = 2
    """Passes over each warm-start rollout."""
    bc_minibatch_size: int = 512
    """Examples per imitation gradient step (supervised learning wants smaller batches
    and more steps than PPO: 512 imitates the heuristic far better than 4,096)."""
    bc_learning_rate: float = 1e-3
    """Adam learning rate during the warm start, constant (0: PPO's schedule)."""

    # --- opponents ---
    opp_self: float = 0.6
    """Weight of pure self-play games."""
    opp_pool: float = 0.2
    """Weight of games against a past snapshot."""
    opp_baselines: float = 0.2
    """Weight of games against baseline agents."""
    baselines: str = "heuristic,random"
    """Baseline agents for opponent games (registered names)."""
    snapshot_every: int = 5
    """Iterations between snapshots added to the pool."""
    pool_size: int = 8
    """Snapshots kept (the oldest is dropped)."""

    # --- evaluation and checkpoints ---
    eval_every: int = 10
    """Iterations between duplicate evaluations (0: only at the end)."""
    eval_games: int = 200
    """Games per periodic evaluation, against each eval opponent."""
    eval_opponents: str = "heuristic,random"
    """Each periodic evaluation plays the policy against three of each of these."""
    final_eval_games: int = 1000
    """Games of the final evaluation against each eval opponent."""
    eval_seed: int = 12345
    """Seed of the periodic evaluations' deal sets (the same every time, for comparable
    points)."""
    final_eval_seed: int = 54321
    """Seed of the final evaluation's deal sets (held out from the periodic ones, which
    chose the best checkpoint)."""
    checkpoint_every: int = 10
    """Iterations between checkpoints (latest.pt; best.pt follows the evaluations)."""
    progress: bool = True
    """Show a progress bar."""


def load_args(config: str | None = None, overrides: dict[str, Any] | None = None) -> Args:
    """Args from a YAML file and overrides; an unknown field is an error."""
    values: dict[str, Any] = {}
    if config:
        data = yaml.safe_load(Path(config).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{config}: a training config is a mapping of fields")
        values.update(data)
    values.update(overrides or {})
    known = {f.name for f in dataclasses.fields(Args)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown training field(s) {unknown}; known fields: {sorted(known)}")
    return Args(**values)


def model_config(args: Args) -> PolicyConfig:
    return PolicyConfig(
        obs_dim=OBS_DIM,
        hidden=args.hidden,
        layers=args.layers,
        card_embed=args.card_embed,
        state_dim=PRIVILEGED_DIM if args.central_critic else 0,
    )


# ---------------------------------------------------------------------- rollouts (workers)


GAME_KINDS = ("self", "pool", "agent")  # self-play, against a pool snapshot, against baselines


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
        return {name: self.final_scores[self.learning & (self.kinds == k)[:, None]].astype(float).tolist()
                for k, name in enumerate(GAME_KINDS) if (self.kinds == k).any()}


def per_seat_gae(rewards, values, dones, next_index, gamma: float, lam: float) -> np.ndarray:
    """GAE along each seat's own decisions: ``next_index[t]`` is the index of the same
    seat's next transition (ignored where ``dones[t]``); transitions are in time order, so
    a backward pass sees every successor first.

    >>> per_seat_gae(np.array([0., 1., 2.]), np.zeros(3), np.array([False, True, True]),
    ...              np.array([1, -1, -1]), gamma=0.5, lam=1.0).tolist()
    [0.5, 1.0, 2.0]
    """
    return _per_seat_gae(np.asarray(rewards, dtype=np.float64), np.asarray(values, dtype=np.float64),
                         np.asarray(dones, dtype=np.bool_), np.asarray(next_index, dtype=np.int64),
                         float(gamma), float(lam))


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


def opponent_plan(args: Args, rng: np.random.Generator, num_games: int, pool_ids: list[int], num_baselines: int,
                  teacher: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Who plays each seat of each game of a rollout, by the weights ``opp_self`` /
    ``opp_pool`` / ``opp_baselines`` (a teacher's games are all self-play): ``kinds`` [G]
    (indices into ``GAME_KINDS``: self-play, pool snapshot, baselines), ``learning`` [G, 4]
    (the learning seats: all four in self-play, else one or two), ``snapshot`` [G] (a pool
    game's snapshot id, else -1) and ``agent_of`` [G, 4] (a baseline seat's index into
    the baselines, else -1)."""
    weights = np.array([args.opp_self, args.opp_pool if pool_ids else 0.0, args.opp_baselines if num_baselines else 0.0])
    if teacher:
        weights = np.array([1.0, 0.0, 0.0])
    kinds = rng.choice(3, size=num_games, p=weights / weights.sum())
    learning = np.ones((num_games, NUM_PLAYERS), dtype=bool)
    snapshot = np.full(num_games, -1, dtype=np.int64)
    agent_of = np.full((num_games, NUM_PLAYERS), -1, dtype=np.int64)
    for i in np.flatnonzero(kinds):
        learners = rng.choice(NUM_PLAYERS, int(rng.integers(1, 3)), replace=False)
        learning[i] = False
        learning[i, learners] = True
        if kinds[i] == 1:
            snapshot[i] = pool_ids[int(rng.integers(len(pool_ids)))]
        else:
            agent_of[i, ~learning[i]] = rng.integers(num_baselines, size=NUM_PLAYERS - len(learners))
    return kinds, learning, snapshot, agent_of


class _Game:
    """One game of a rollout: the state, its encoder, and who plays each seat."""

    def __init__(self, state: BarbuState, roles: list):
        self.state = state
        self.encoder = ObservationEncoder()
        self.roles = roles  # per seat: None (learning), ("pool", id) or ("agent", Agent)
        self.open = [-1] * NUM_PLAYERS  # each learning seat's transition still collecting reward
        self.pending = [0.0] * NUM_PLAYERS  # reward collected since that transition


def collect(
    args: Args, rules, model, pool: dict, rng: np.random.Generator, torch_gen: torch.Generator, teacher: str = ""
) -> Rollout:
    """Play ``games_per_worker`` whole games and return the learning seats' transitions.

    With a ``teacher`` (an agent name) every seat of every game is played by that agent
    instead, for imitation: the actions are the teacher's, ``logprobs`` and ``values``
    are 0 and ``returns`` are the seats' discounted Monte Carlo returns."""
    from barbu_env.agents import make_agent

    baselines = [b for b in args.baselines.split(",") if b]
    kinds, learning, snapshot, agent_of = opponent_plan(args, rng, args.games_per_worker, list(pool), len(baselines),
                                                        teacher=bool(teacher))
    games, teachers = [], []
    for i, kind in enumerate(kinds):
        if teacher:
            teachers.append([make_agent(teacher, seed=int(rng.integers(2**31)), rules=rules) for _ in range(4)])
        roles: list = [None] * NUM_PLAYERS  # per seat: None (learning), ("pool", id) or ("agent", Agent)
        for seat in np.flatnonzero(~learning[i]):
            if kind == 1:
                roles[seat] = ("pool", int(snapshot[i]))
            else:
                agent = make_agent(baselines[agent_of[i, seat]], seed=int(rng.integers(2**31)), rules=rules)
                roles[seat] = ("agent", agent)
        state = BarbuState.new_game(rules, np.random.default_rng(rng.integers(2**63)))
        games.append(_Game(state, roles))

    obs_l, state_l, mask_l, act_l, logp_l, val_l = [], [], [], [], [], []
    game_l, seat_l = [], []
    rewards: list[float] = []
    dones: list[bool] = []
    next_index: list[int] = []
    decisions = 0
    alive = list(range(len(games)))
    while alive:
        # --- gather the decision of every live game, grouped by who decides ---
        groups: dict[Any, list] = {}
        actions: dict[int, int] = {}
        for gi in alive:
            g = games[gi]
            seat = g.state.current_player
            legal = g.state.legal_mask()
            if args.skip_forced and legal & (legal - 1) == 0:  # one legal action: no decision to make
                actions[gi] = legal.bit_length() - 1
                continue
            role = g.roles[seat]
            key = None if role is None else (role if role[0] == "pool" else ("agent", gi))
            groups.setdefault(key, []).append((gi, seat, g.encoder.observe(g.state, seat), mask_array(legal)))
        for key, items in groups.items():
            obs = np.stack([it[2] for it in items])
            masks = np.stack([it[3] for it in items]).astype(bool)
            if key is None:  # the learning policy (or the teacher it imitates)
                states = None
                if args.central_critic:
                    states = torch.from_numpy(np.stack([games[gi].encoder.privileged(o, seat) for gi, seat, o, _ in items]))
                if teacher:
                    acts = [teachers[gi][seat].act({"observation": o, "action_mask": m.astype(np.int8)})
                            for gi, seat, o, m in items]
                    logps = values = torch.zeros(len(items))
                else:
                    with torch.no_grad():
                        logits, values = model(torch.from_numpy(obs), states)
                        dist = MaskedCategorical(logits, torch.from_numpy(masks))
                        acts = dist.sample(torch_gen)
                        logps = dist.log_prob(acts)
                for k, (gi, seat, o, m) in enumerate(items):
                    g = games[gi]
                    t = len(rewards)
                    if g.open[seat] >= 0:  # close this seat's previous transition
                        rewards[g.open[seat]] = g.pending[seat]
                        next_index[g.open[seat]] = t
                    g.open[seat], g.pending[seat] = t, 0.0
                    obs_l.append(o)
                    mask_l.append(m)
                    game_l.append(gi)
                    seat_l.append(seat)
                    if states is not None:
                        state_l.append(states[k].numpy())
                    act_l.append(int(acts[k]))
                    logp_l.append(float(logps[k]))
                    val_l.append(float(values[k]))
                    rewards.append(0.0)
                    dones.append(False)
                    next_index.append(-1)
                    actions[gi] = int(acts[k])
            elif key[0] == "pool":
                acts = pool[key[1]].act(obs, masks, generator=torch_gen)
                for k, it in enumerate(items):
                    actions[it[0]] = int(acts[k])
            else:
                gi, seat, o, m = items[0]
                actions[gi] = int(games[gi].roles[seat][1].act({"observation": o, "action_mask": m.astype(np.int8)}))
        # --- apply them; hand scores go to each learning seat's open transition ---
        still = []
        for gi in alive:
            g = games[gi]
            result = g.state.apply_action(actions[gi])
            decisions += 1
            if result is not None:
                for seat in range(NUM_PLAYERS):
                    g.pending[seat] += result.settled[seat] * args.reward_scale
            if g.state.is_terminal:
                for seat in range(NUM_PLAYERS):
                    if g.roles[seat] is None and g.open[seat] >= 0:
                        rewards[g.open[seat]] = g.pending[seat]
                        dones[g.open[seat]] = True
            else:
                still.append(gi)
        alive = still

    values = np.array(val_l, dtype=np.float32)
    lam = 1.0 if teacher else args.gae_lambda  # a teacher's values are 0: lambda 1 gives Monte Carlo returns
    adv = per_seat_gae(np.array(rewards), values, np.array(dones), np.array(next_index), args.gamma, lam)
    return Rollout(
        obs=np.stack(obs_l).astype(np.float32),
        states=np.stack(state_l).astype(np.float32) if state_l else None,
        masks=np.stack(mask_l).astype(bool),
        actions=np.array(act_l, dtype=np.int64),
        logprobs=np.array(logp_l, dtype=np.float32),
        values=values,
        advantages=adv.astype(np.float32),
        returns=(adv + values).astype(np.float32),
        rewards=np.array(rewards, dtype=np.float64),
        dones=np.array(dones, dtype=bool),
        game_ids=np.array(game_l, dtype=np.int32),
        seats=np.array(seat_l, dtype=np.int8),
        final_scores=np.array([g.state.scores for g in games], dtype=np.int64),
        learning=learning,
        kinds=kinds,
        decisions=decisions,
    )


class VectorCollector:
    """Rollouts on the batched engine: ``num_games`` games in lockstep in this process.

    Each step asks every live game's seat to act at once, grouped by who plays it: the
    learning policy (one batched forward pass, on ``torch_threads`` threads), each pool
    snapshot, each baseline agent (its ``act_batch``); forced decisions (``skip_forced``)
    and games already over take their first legal action without asking anyone. The
    learning seats' transitions go straight into buffers kept from one rollout to the
    next; the bookkeeping is the per-game path's (``collect``), over arrays."""

    def __init__(self, args: Args, rules, capacity: int = 0):
        """``capacity``: transitions the buffers hold before they grow (default: about
        ``num_games`` whole games of four learning seats)."""
        from barbu_env.agents import make_agent
        from barbu_env.vector import VectorBarbu

        self.args = args
        self.rules = rules
        self.env = VectorBarbu(args.num_games, rules, seed=args.seed, copy=False)
        self.baselines = [make_agent(b, seed=args.seed + i, rules=rules)
                          for i, b in enumerate(b for b in args.baselines.split(",") if b)]
        self.pool_models: dict[int, BarbuActorCritic] = {}
        self.buf: dict[str, np.ndarray] = {}
        self._grow(capacity or args.num_games * 1400)  # about 1,210 unforced decisions per game

    def _grow(self, capacity: int) -> None:
        """Allocate larger transition buffers, keeping what they hold."""
        old = self.buf
        fields = {"obs": (np.float32, (OBS_DIM,)), "masks": (bool, (85,)), "actions": (np.int64, ()),
                  "logprobs": (np.float32, ()), "values": (np.float32, ()), "rewards": (np.float64, ()),
                  "dones": (bool, ()), "next_index": (np.int64, ()), "game_ids": (np.int32, ()), "seats": (np.int8, ())}
        if self.args.central_critic:
            fields["states"] = (np.float32, (PRIVILEGED_DIM,))
        self.buf = {k: np.empty((capacity, *shape), dtype=dt) for k, (dt, shape) in fields.items()}
        for k, a in old.items():
            self.buf[k][: len(a)] = a

    @property
    def capacity(self) -> int:
        """Transitions the buffers hold."""
        return len(self.buf["actions"])

    def _pool_model(self, sid: int, state_dict: dict) -> BarbuActorCritic:
        if sid not in self.pool_models:
            self.pool_models[sid] = BarbuActorCritic(model_config(self.args))
            self.pool_models[sid].load_state_dict(state_dict)
            self.pool_models[sid].eval()
        return self.pool_models[sid]

    def collect(self, model, pool: dict, rng: np.random.Generator, torch_gen: torch.Generator,
                teacher: str = "") -> Rollout:
        """Play ``num_games`` whole games; the same contract as ``collect``."""
        from barbu_env.agents import act_batch, make_agent

        args, env, B = self.args, self.env, self.args.num_games
        for sid in [s for s in self.pool_models if s not in pool]:
            del self.pool_models[sid]
        # --- who plays each seat of each game ---
        if teacher:
            teacher_agent = make_agent(teacher, seed=int(rng.integers(2**31)), rules=self.rules)
        kinds, learning, snapshot, agent_of = opponent_plan(args, rng, B, list(pool), len(self.baselines),
                                                            teacher=bool(teacher))

        # --- play every game to its end ---
        buf = self.buf
        obs, masks, seat = env.reset(seed=int(rng.integers(2**63)))
        rows = np.arange(B)
        live = np.ones(B, dtype=bool)
        open_t = np.full((B, NUM_PLAYERS), -1, dtype=np.int64)  # each learning seat's open transition
        pending = np.zeros((B, NUM_PLAYERS), dtype=np.float64)  # reward collected since it opened
        final_scores = np.zeros((B, NUM_PLAYERS), dtype=np.int64)
        T = decisions = 0
        while live.any():
            actions = masks.argmax(1)  # the first legal action: forced decisions and finished games
            asks = live & (masks.sum(1) > 1) if args.skip_forced else live.copy()
            mine = learning[rows, seat]
            # --- the learning policy (or the teacher it imitates) ---
            idx = np.flatnonzero(asks & mine)
            if len(idx):
                n = len(idx)
                if T + n > self.capacity:
                    self._grow(int(self.capacity * 1.5) + n)
                    buf = self.buf
                o, m = buf["obs"][T : T + n], buf["masks"][T : T + n]
                np.take(obs, idx, axis=0, out=o)
                np.take(masks, idx, axis=0, out=m)
                if teacher:
                    a = act_batch(teacher_agent, o, m.view(np.int8))
                    buf["logprobs"][T : T + n] = 0.0
                    buf["values"][T : T + n] = 0.0
                else:
                    states = None
                    if args.central_critic:
                        st = buf["states"][T : T + n]
                        st[:, :OBS_DIM] = o
                        st[:, OBS_DIM:] = env.other_hands()[idx]
                        states = torch.from_numpy(st)
                    with torch.no_grad():
                        logits, values = model(torch.from_numpy(o), states)
                        dist = MaskedCategorical(logits, torch.from_numpy(m))
                        a_t = dist.sample(torch_gen)
                        buf["logprobs"][T : T + n] = dist.log_prob(a_t).numpy()
                        buf["values"][T : T + n] = values.numpy()
                    a = a_t.numpy()
                actions[idx] = a
                s_idx = seat[idx]
                t_new = np.arange(T, T + n)
                prev = open_t[idx, s_idx]
                had = prev >= 0  # close this seat's previous transition
                buf["rewards"][prev[had]] = pending[idx[had], s_idx[had]]
                buf["next_index"][prev[had]] = t_new[had]
                open_t[idx, s_idx] = t_new
                pending[idx, s_idx] = 0.0
                buf["actions"][T : T + n] = a
                buf["rewards"][T : T + n] = 0.0
                buf["dones"][T : T + n] = False
                buf["next_index"][T : T + n] = -1
                buf["game_ids"][T : T + n] = idx
                buf["seats"][T : T + n] = s_idx
                T += n
            # --- opponents: pool snapshots, then baseline agents ---
            theirs = asks & ~mine
            if theirs.any():
                for sid in np.unique(snapshot[theirs & (snapshot >= 0)]):
                    j = np.flatnonzero(theirs & (snapshot == sid))
                    actions[j] = self._pool_model(int(sid), pool[int(sid)]).act(obs[j], masks[j], generator=torch_gen)
                seat_agent = agent_of[rows, seat]
                for k in np.unique(seat_agent[theirs & (seat_agent >= 0)]):
                    j = np.flatnonzero(theirs & (seat_agent == k))
                    actions[j] = act_batch(self.baselines[int(k)], obs[j], masks[j].view(np.int8))
            # --- one step of every game; hand scores go to each learning seat's open transition ---
            decisions += int(live.sum())
            obs, masks, seat, rewards, dones, infos = env.step(actions)
            pending += rewards * args.reward_scale
            ended = np.flatnonzero(dones & live)
            if len(ended):
                final_scores[ended] = infos["final_scores"][ended]
                last, was_open = open_t[ended], open_t[ended] >= 0  # every open transition ends with the game
                buf["rewards"][last[was_open]] = pending[ended][was_open]
                buf["dones"][last[was_open]] = True
                live[ended] = False

        # --- advantages along each seat's own decisions ---
        values = buf["values"][:T]
        lam = 1.0 if teacher else args.gae_lambda  # a teacher's values are 0: lambda 1 gives Monte Carlo returns
        adv = per_seat_gae(buf["rewards"][:T], values, buf["dones"][:T], buf["next_index"][:T], args.gamma, lam)
        return Rollout(
            obs=buf["obs"][:T], states=buf["states"][:T] if args.central_critic else None, masks=buf["masks"][:T],
            actions=buf["actions"][:T], logprobs=buf["logprobs"][:T], values=values,
            advantages=adv.astype(np.float32), returns=(adv + values).astype(np.float32),
            rewards=buf["rewards"][:T], dones=buf["dones"][:T], game_ids=buf["game_ids"][:T], seats=buf["seats"][:T], final_scores=final_scores, learning=learning,
            kinds=kinds, decisions=decisions,
        )


def worker_main(conn, args_dict: dict, worker_id: int) -> None:
    """A rollout process: receives weights and the pool, sends back rollouts."""
    torch.set_num_threads(1)
    args = Args(**args_dict)
    rules = load_rules(args.rules)
    model = BarbuActorCritic(model_config(args))
    model.eval()
    pool: dict[int, BarbuActorCritic] = {}
    while True:
        msg = conn.recv()
        if msg is None:
            break
        iteration, state_dict, pool_dicts, teacher = msg
        model.load_state_dict(state_dict)
        for sid in [s for s in pool if s not in pool_dicts]:
            del pool[sid]
        for sid, sd in pool_dicts.items():
            if sid not in pool:
                pool[sid] = BarbuActorCritic(model_config(args))
                pool[sid].load_state_dict(sd)
                pool[sid].eval()
        seed = [args.seed, iteration, worker_id]
        rollout = collect(args, rules, model, pool, np.random.default_rng(seed),
                          torch.Generator().manual_seed(int(np.random.SeedSequence(seed).generate_state(1)[0])), teacher)
        conn.send(rollout)


class WorkerPool:
    """``num_workers`` rollout processes (spawned: safe with torch's threads)."""

    def __init__(self, args: Args):
        ctx = mp.get_context("spawn")
        self.conns, self.procs = [], []
        for i in range(args.num_workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child, dataclasses.asdict(args), i), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def collect(self, iteration: int, state_dict: dict, pool: dict, teacher: str = "") -> list[Rollout]:
        for conn in self.conns:
            conn.send((iteration, state_dict, {sid: pool[sid] for sid in pool}, teacher))
        return [conn.recv() for conn in self.conns]

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()


# ---------------------------------------------------------------------- evaluation


def evaluate_checkpoint(path: Path, args: Args, games: int, seed: int | None = None) -> dict[str, Any]:
    """Duplicate evaluation of a checkpoint against three of each eval opponent (on the
    periodic evaluations' deals unless another ``seed`` is given)."""
    from barbu_env.tournament import evaluate

    out = {}
    for opp in [o for o in args.eval_opponents.split(",") if o]:
        result = evaluate([str(path), opp, opp, opp], games=games, seed=args.eval_seed if seed is None else seed,
                          rules=args.rules,
                          workers=args.num_workers)
        entry = result.entries[0]
        ci = list(entry.score.ci95) if entry.score.ci95 else [entry.score.mean, entry.score.mean]
        out[opp] = {"mean": entry.score.mean, "ci": ci, "result": result}
    return out


def plot_learning_curve(history: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for opp in sorted({k for h in history for k in h["eval"]}):
        pts = [(h["decisions"], h["eval"][opp]) for h in history if opp in h["eval"]]
        x = np.array([p[0] for p in pts]) / 1e6
        mean = np.array([p[1]["mean"] for p in pts])
        lo = np.array([p[1]["ci"][0] for p in pts])
        hi = np.array([p[1]["ci"][1] for p in pts])
        ax.plot(x, mean, marker="o", label=f"vs 3x {opp}")
        ax.fill_between(x, lo, hi, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    imitation = [h["decisions"] for h in history if h.get("imitating")]
    if imitation and len(imitation) < len(history):
        ax.axvline(max(imitation) / 1e6, color="grey", ls="--", lw=0.8, label="end of imitation")
    ax.set_xlabel("environment decisions (millions)")
    ax.set_ylabel("mean score per game (95% CI)")
    ax.set_title("Duplicate evaluation during training")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------- training


def train(args: Args) -> dict[str, Any]:
    """Run PPO; returns a summary (paths, final evaluation). Writes everything under
    ``run_dir/exp_name``."""
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm

    run = Path(args.run_dir) / args.exp_name
    ckpt_dir = run / "checkpoints"
    if not args.resume:  # a fresh run owns its folder: no curves left over from an earlier one
        shutil.rmtree(run / "tb", ignore_errors=True)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    (run / "config.yaml").write_text(yaml.safe_dump(dataclasses.asdict(args), sort_keys=False))
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    writer = SummaryWriter(str(run / "tb"))
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()),
    )

    model = BarbuActorCritic(model_config(args))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    iteration, decisions, next_snapshot_id = 0, 0, 0
    pool: dict[int, dict] = {}
    history: list[dict] = []
    best = {"score": -float("inf"), "path": None}
    if args.resume:
        resumed, payload = load_checkpoint(args.resume)
        model.load_state_dict(resumed.state_dict())
        optimizer.load_state_dict(payload["optimizer"])
        iteration, decisions = int(payload["iteration"]), int(payload["decisions"])
        pool = {int(k): v for k, v in payload.get("pool", {}).items()}
        next_snapshot_id = max(pool, default=-1) + 1
        history = json.loads(payload.get("history", "[]"))
        best = json.loads(payload.get("best", json.dumps(best)))

    def checkpoint(path: Path) -> Path:
        save_checkpoint(
            path, model, optimizer=optimizer.state_dict(), iteration=iteration, decisions=decisions,
            args=dataclasses.asdict(args), pool={str(k): v for k, v in pool.items()},
            history=json.dumps(history), best=json.dumps(best),
        )
        return path

    def run_eval(games: int) -> dict[str, Any]:
        path = checkpoint(ckpt_dir / "latest.pt")
        found = evaluate_checkpoint(path, args, games)
        point = {"iteration": iteration, "decisions": decisions, "imitating": iteration <= args.bc_iterations,
                 "eval": {k: {"mean": v["mean"], "ci": v["ci"]} for k, v in found.items()}}
        history.append(point)
        for opp, v in found.items():
            writer.add_scalar(f"eval/score_vs_{opp}", v["mean"], decisions)
            writer.add_scalar(f"eval/ci_low_vs_{opp}", v["ci"][0], decisions)
        key = args.eval_opponents.split(",")[0]
        if found[key]["mean"] > best["score"]:
            best.update(score=found[key]["mean"], path=str(ckpt_dir / "best.pt"), iteration=iteration)
            shutil.copyfile(path, ckpt_dir / "best.pt")
        return found

    if args.rollout_engine not in ("vector", "aec"):
        raise ValueError(f"rollout_engine is 'vector' or 'aec', not {args.rollout_engine!r}")
    workers = WorkerPool(args) if args.rollout_engine == "aec" else None
    collector = VectorCollector(args, load_rules(args.rules)) if workers is None else None

    def collect_rollouts(iteration: int, teacher: str) -> list[Rollout]:
        if workers is not None:
            return workers.collect(iteration, model.state_dict(), pool, teacher)
        seed = [args.seed, iteration]
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
        return [collector.collect(model, pool, np.random.default_rng(seed), gen, teacher)]

    start = time.time()
    timing = {"decisions": 0, "collect_seconds": 0.0, "update_seconds": 0.0}  # this process's rollouts and updates

    def progress() -> float:
        """Share of the run done: by decisions, or by time when there is a time budget."""
        done = decisions / args.total_decisions
        if args.time_budget_minutes:
            done = max(done, (time.time() - start) / (args.time_budget_minutes * 60))
        return min(done, 1.0)
    bar = tqdm(total=args.total_decisions, initial=decisions, unit="dec", disable=not args.progress, dynamic_ncols=True)
    last_eval = ""
    try:
        while decisions < args.total_decisions:
            if progress() >= 1.0:
                break
            iteration += 1
            imitate = iteration <= args.bc_iterations
            if imitate and args.bc_learning_rate > 0:
                optimizer.param_groups[0]["lr"] = args.bc_learning_rate
            elif args.anneal_lr:
                optimizer.param_groups[0]["lr"] = (1.0 - progress()) * args.learning_rate
            else:
                optimizer.param_groups[0]["lr"] = args.learning_rate

            # --- rollouts (the teacher's games during the warm start) ---
            t0 = time.time()
            rollouts = collect_rollouts(iteration, args.bc_teacher if imitate else "")
            collect_time = time.time() - t0
            step_decisions = sum(r.decisions for r in rollouts)
            decisions += step_decisions

            def batch(field: str) -> torch.Tensor:  # one rollout's arrays are used in place
                arrays = [getattr(r, field) for r in rollouts]
                return torch.from_numpy(arrays[0] if len(arrays) == 1 else np.concatenate(arrays))
            b_obs, b_masks, b_actions = batch("obs"), batch("masks"), batch("actions")
            b_states = batch("states") if args.central_critic else None
            b_logprobs, b_values = batch("logprobs"), batch("values")
            b_advantages, b_returns = batch("advantages"), batch("returns")

            t1 = time.time()
            model.train()
            n = len(b_obs)
            # --- warm start: imitate the teacher (cross-entropy on its actions, value on the returns) ---
            if imitate:
                for _epoch in range(args.bc_epochs):
                    perm = torch.randperm(n)
                    for lo in range(0, n, args.bc_minibatch_size):
                        mb = perm[lo : lo + args.bc_minibatch_size]
                        logits, newvalue = model(b_obs[mb], b_states[mb] if b_states is not None else None)
                        dist = MaskedCategorical(logits, b_masks[mb])
                        bc_loss = -dist.log_prob(b_actions[mb]).mean()
                        v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                        loss = bc_loss + args.vf_coef * v_loss
                        optimizer.zero_grad()
                        loss.backward()
                        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                        optimizer.step()
                with torch.no_grad():
                    accuracy = (dist.mode() == b_actions[mb]).float().mean().item()
                writer.add_scalar("losses/bc_loss", bc_loss.item(), decisions)
                writer.add_scalar("losses/bc_value_loss", v_loss.item(), decisions)
                writer.add_scalar("charts/bc_accuracy", accuracy, decisions)
            # --- PPO update (CleanRL's ppo.py, with masks reapplied) ---
            clipfracs, approx_kl = [], torch.tensor(0.0)
            for _epoch in range(0 if imitate else args.update_epochs):
                perm = torch.randperm(n)
                for lo in range(0, n, args.minibatch_size):
                    mb = perm[lo : lo + args.minibatch_size]
                    logits, newvalue = model(b_obs[mb], b_states[mb] if b_states is not None else None)
                    dist = MaskedCategorical(logits, b_masks[mb])
                    newlogprob = dist.log_prob(b_actions[mb])
                    entropy = dist.entropy()
                    logratio = newlogprob - b_logprobs[mb]
                    ratio = logratio.exp()
                    with torch.no_grad():
                        approx_kl = ((ratio - 1) - logratio).mean()  # http://joschu.net/blog/kl-approx.html
                        clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                    mb_adv = b_advantages[mb]
                    if args.norm_adv:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                    if args.clip_vloss:
                        v_clipped = b_values[mb] + (newvalue - b_values[mb]).clamp(-args.clip_coef, args.clip_coef)
                        v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                    else:
                        v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                    entropy_loss = entropy.mean()
                    loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                    optimizer.step()
                if args.target_kl and approx_kl > args.target_kl:
                    break
            model.eval()
            update_time = time.time() - t1

            # --- opponents pool ---
            if args.snapshot_every and iteration % args.snapshot_every == 0:
                pool[next_snapshot_id] = {k: v.clone() for k, v in model.state_dict().items()}
                next_snapshot_id += 1
                while len(pool) > args.pool_size:
                    del pool[min(pool)]

            # --- logging ---
            sps = step_decisions / (collect_time + update_time)
            timing["decisions"] += step_decisions
            timing["collect_seconds"] += collect_time
            timing["update_seconds"] += update_time
            scores = [s for r in rollouts for s in r.learner_scores]
            writer.add_scalar("charts/SPS", sps, decisions)
            writer.add_scalar("charts/collect_SPS", step_decisions / collect_time, decisions)
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], decisions)
            writer.add_scalar("charts/learner_score", float(np.mean(scores)), decisions)
            for kind in GAME_KINDS:
                ks = [s for r in rollouts for s in r.kind_scores.get(kind, [])]
                if ks:
                    writer.add_scalar(f"charts/learner_score_{kind}", float(np.mean(ks)), decisions)
            if not imitate:
                var_y = b_returns.var()
                explained_var = float("nan") if var_y == 0 else float(1 - (b_returns - b_values).var() / var_y)
                writer.add_scalar("losses/value_loss", v_loss.item(), decisions)
                writer.add_scalar("losses/policy_loss", pg_loss.item(), decisions)
                writer.add_scalar("losses/entropy", entropy_loss.item(), decisions)
                writer.add_scalar("losses/approx_kl", approx_kl.item(), decisions)
                writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), decisions)
                writer.add_scalar("losses/explained_variance", explained_var, decisions)

            # --- evaluation and checkpoints ---
            if args.eval_every and iteration % args.eval_every == 0:
                found = run_eval(args.eval_games)
                last_eval = " ".join(f"{k}:{v['mean']:+.0f}" for k, v in found.items())
            elif args.checkpoint_every and iteration % args.checkpoint_every == 0:
                checkpoint(ckpt_dir / "latest.pt")
            bar.update(step_decisions)
            phase = "imitating" if imitate else "PPO"
            bar.set_postfix_str(f"it {iteration} {phase} SPS {sps:,.0f} eval {last_eval or '-'}")
    finally:
        bar.close()
        if workers is not None:
            workers.close()

    # --- the end: final evaluation of the best checkpoint, learning curve ---
    if args.eval_every:  # a last point on the learning curve
        run_eval(args.eval_games)
    final_path = Path(best["path"]) if best["path"] else checkpoint(ckpt_dir / "latest.pt")
    # The best checkpoint was picked on the periodic evaluations' deals: the final
    # evaluation plays fresh ones, so its figure carries no selection bias.
    final = evaluate_checkpoint(final_path, args, args.final_eval_games, seed=args.final_eval_seed)
    for opp, v in final.items():
        writer.add_scalar(f"eval/final_score_vs_{opp}", v["mean"], decisions)
    if history:
        plot_learning_curve(history, run / "learning_curve.png")
    writer.close()
    summary = {
        "run": str(run),
        "best_checkpoint": str(final_path),
        "decisions": decisions,
        "iterations": iteration,
        "minutes": (time.time() - start) / 60,
        "timing": timing,
        "final": {k: {"mean": v["mean"], "ci": v["ci"]} for k, v in final.items()},
        "history": history,
    }
    (run / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["final_results"] = {k: v["result"] for k, v in final.items()}
    return summary


# ---------------------------------------------------------------------- command line


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass, read from its source."""
    import ast
    import inspect
    import textwrap

    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``--config FILE`` plus one ``--field`` per Args field (overrides the config)."""
    parser = parser or argparse.ArgumentParser(prog="barbu train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="YAML file of Args fields (configs/train/*.yaml)")
    return add_field_flags(parser, Args, defaults=False)


def add_field_flags(parser: argparse.ArgumentParser, cls: type, defaults: bool = True) -> argparse.ArgumentParser:
    """One ``--field`` per field of the dataclass ``cls`` (int, float, str or bool), its
    docstring as help; without ``defaults`` an absent flag is left out of the namespace
    (so that a config file can fill it)."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        kind = {"int": int, "float": float, "str": str, "bool": _bool}[f.type]
        parser.add_argument("--" + f.name.rstrip("_").replace("_", "-"), dest=f.name, type=kind,
                            default=f.default if defaults else argparse.SUPPRESS,
                            help=f"{docs.get(f.name, '')} (default {f.default!r})")
    return parser


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def main(argv: list[str] | None = None) -> int:
    from barbu_env.tournament import format_table

    ns = vars(build_parser().parse_args(argv))
    config = ns.pop("config", None)
    args = load_args(config, ns)
    summary = train(args)
    for opp, result in summary["final_results"].items():
        print(f"\nFinal evaluation vs 3x {opp}:\n{format_table(result)}")
    print(f"\nbest checkpoint: {summary['best_checkpoint']}")
    if (Path(summary["run"]) / "learning_curve.png").exists():
        print(f"learning curve: {Path(summary['run']) / 'learning_curve.png'}")
    print(f"run folder: {summary['run']} ({summary['decisions']:,} decisions in {summary['minutes']:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
