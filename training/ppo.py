"""Self-play PPO for Barbu: one masked actor-critic plays all four seats.

Proximal Policy Optimization with the clipped surrogate (Schulman et al. 2017), in the manner
of CleanRL's ``ppo.py``. Read top to bottom: the updates, then ``PPO``, the learner, whose
``iterate`` is one iteration:

1. collect: whole games on the batched engine (``barbu_training.rollout``), seeded by the
   run's seed and the iteration, their advantages by GAE along each seat's own decisions;
2. update: ``update_epochs`` passes of clipped PPO over shuffled minibatches
   (``ppo_update``; with ``kl_coef`` above 0, a KL term toward a frozen anchor network,
   ``anchor_kl``; with ``hands_coef`` above 0, an auxiliary loss: where the hidden cards
   are, ``hands_loss``, with ``hands_uniform`` as a correction to the uniform marginals on
   positions drawn from the rollout, ``uniform_hands_batch``), or during the warm start
   (``bc_iterations``) the teacher's actions and returns learnt by imitation
   (``imitation_update``); the rollout's returns, the losses and the weights must be
   finite (``NotFinite`` otherwise);
3. snapshot: every ``snapshot_every`` iterations a copy of the weights joins the opponents'
   pool (at most ``pool_size``);
4. log: TensorBoard scalars, ``charts/`` (decisions per second, learning rate, the learning
   seats' scores by game kind) and ``losses/``.

The run around the learner (its folder, checkpoints and resume, rollout workers, periodic
evaluations) is ``barbu_training.run``; the command line and chains of runs
``barbu_training.train``; the arguments ``barbu_training.config``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from barbu_env.util.extras import needs

with needs("train", "barbu_training.ppo"):  # one line if the extra is missing
    import torch

from barbu_env import belief
from barbu_env.game.cards import NUM_CARDS
from barbu_env.util.files import quote
from barbu_models.policy import BarbuActorCritic, MaskedCategorical, hands_loss, load_belief
from barbu_training.config import Args, model_config, shipped_belief
from barbu_training.precision import autocast
from barbu_training.rollout import GAME_KINDS, Collector, Rollout, rollout_generators

#: Losses of an update that must be finite (the explained variance may be NaN: returns of no variance).
FINITE_STATS = (
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
    "losses/approx_kl",
    "losses/bc_loss",
    "losses/bc_value_loss",
    "losses/kl_anchor",
    "losses/hands",
)


# ---------------------------------------------------------------------- the updates


def as_tensors(rollout: Rollout, central_critic: bool) -> dict[str, torch.Tensor]:
    """The rollout's training arrays as tensors sharing their memory."""
    fields = ["obs", "masks", "actions", "logprobs", "values", "advantages", "returns"]
    out = {k: torch.from_numpy(getattr(rollout, k)) for k in fields}
    out["states"] = torch.from_numpy(rollout.states) if central_critic else None
    return out


def minibatch(b: dict, mb: torch.Tensor, device: torch.device) -> dict[str, torch.Tensor]:
    """Rows ``mb`` of the rollout's tensors, gathered on the CPU and copied to ``device``
    (the model's: a whole rollout, gigabytes of observations, may not fit on a GPU; a
    minibatch does); no ``states`` without a privileged critic."""
    return {k: v[mb].to(device) for k, v in b.items() if v is not None}


def imitation_update(
    model: BarbuActorCritic,
    optimizer: torch.optim.Optimizer,
    b: dict,
    args: Args,
    gen: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> dict[str, float]:
    """Warm start: train the policy to pick the teacher's actions (masked cross-entropy)
    and the value head to predict the returns, ``bc_epochs`` passes of
    ``bc_minibatch_size`` (shuffled with ``gen``), the forward passes' matrix products in
    ``dtype`` (``barbu_training.precision``), each minibatch copied to the model's device.
    Returns the last minibatch's losses and accuracy."""
    n = len(b["obs"])
    device = next(model.parameters()).device
    for _epoch in range(args.bc_epochs):
        perm = torch.randperm(n, generator=gen)
        for lo in range(0, n, args.bc_minibatch_size):
            m = minibatch(b, perm[lo : lo + args.bc_minibatch_size], device)
            with autocast(dtype, device):
                logits, newvalue = model(m["obs"], m.get("states"))
            logits, newvalue = logits.float(), newvalue.float()
            dist = MaskedCategorical(logits, m["masks"])
            bc_loss = -dist.log_prob(m["actions"]).mean()
            v_loss = 0.5 * ((newvalue - m["returns"]) ** 2).mean()
            loss = bc_loss + args.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
    with torch.no_grad():
        accuracy = (dist.mode() == m["actions"]).float().mean().item()
    return {"losses/bc_loss": bc_loss.item(), "losses/bc_value_loss": v_loss.item(), "charts/bc_accuracy": accuracy}


def uniform_hands_batch(b: dict, count: int, gen: torch.Generator, obs_dim: int) -> dict[str, torch.Tensor]:
    """``count`` positions of the rollout ``b`` (all if it has fewer), drawn with ``gen``:
    their observations ``obs``, the other three hands ``hidden`` ``[k, 3, 52]`` (relative
    seats 1-3: the privileged view's rows past ``obs_dim``) and ``log_uniform`` ``[k, 3,
    52]``, the logarithms of the exact uniform marginals (``barbu_env.belief``,
    ``model="uniform"``; -1e4 where a seat cannot hold the card): ``ppo_update``'s hands
    term with ``hands_uniform``."""
    rows = torch.randperm(len(b["obs"]), generator=gen)[:count]
    obs = b["obs"][rows]
    uniform = np.stack([belief.probabilities(o, model=belief.UNIFORM)[:, 1:] for o in obs.numpy()])  # [k, 52, 3]
    with np.errstate(divide="ignore"):
        log_uniform = torch.from_numpy(np.log(uniform)).permute(0, 2, 1).float().clamp_min(-1e4)
    return {"obs": obs, "hidden": b["states"][rows, obs_dim:].reshape(-1, 3, NUM_CARDS), "log_uniform": log_uniform}


def anchor_kl(anchor: MaskedCategorical, policy: MaskedCategorical) -> torch.Tensor:
    """KL(anchor || policy) of each row, over its legal actions (both masked alike): 0
    where the two distributions are equal, positive elsewhere."""
    terms = anchor.probs * (anchor.log_probs_all - policy.log_probs_all)
    return torch.where(anchor.mask, terms, torch.zeros_like(terms)).sum(-1)


def ppo_update(
    model: BarbuActorCritic,
    optimizer: torch.optim.Optimizer,
    b: dict,
    args: Args,
    gen: torch.Generator,
    dtype: torch.dtype = torch.float32,
    anchor: BarbuActorCritic | None = None,
    hands_batch: dict[str, torch.Tensor] | None = None,
) -> dict[str, float]:
    """``update_epochs`` passes of clipped PPO over the rollout (CleanRL's update, with the
    masks reapplied; minibatches shuffled with ``gen``; the forward passes' matrix products
    in ``dtype``, ``barbu_training.precision``). Returns the last minibatch's
    losses, the clip fraction, the explained variance, and ``losses/first_ratio_error``:
    the largest ``|ratio - 1|`` of the first minibatch (0 up to rounding: the stored
    log-probabilities are the model's own before the update). The rollout ``b`` stays on
    the CPU; each minibatch is copied to the model's device (``minibatch``). With an
    ``anchor`` (a frozen network on the model's device) and ``args.kl_coef`` above 0 the
    loss adds ``kl_coef`` times the mean ``anchor_kl`` of the minibatch, the anchor's
    forward pass under no_grad (``losses/kl_anchor``: the last minibatch's). With
    ``args.hands_coef`` above 0 it adds ``hands_coef`` times the hands head's
    ``hands_loss`` against the privileged view's hands (``losses/hands`` and
    ``losses/hands_accuracy``: the last minibatch's): over each minibatch's rows, or, given
    a ``hands_batch`` (``uniform_hands_batch``), over its next share of those positions, the
    head's logits added to the uniform marginals' logarithms."""
    n = len(b["obs"])
    device = next(model.parameters()).device
    clipfracs, approx_kl, first_ratio_error = [], torch.tensor(0.0), None
    pull = anchor is not None and args.kl_coef > 0
    aux = args.hands_coef > 0
    share = 0 if hands_batch is None else -(-len(hands_batch["obs"]) // -(-n // args.minibatch_size))
    for _epoch in range(args.update_epochs):
        perm = torch.randperm(n, generator=gen)
        hands_perm = None if hands_batch is None else torch.randperm(len(hands_batch["obs"]), generator=gen)
        for i, lo in enumerate(range(0, n, args.minibatch_size)):
            m = minibatch(b, perm[lo : lo + args.minibatch_size], device)
            with autocast(dtype, device):
                logits, newvalue, hands = model.heads(m["obs"], m.get("states"), hands=aux and hands_batch is None)
            logits, newvalue = logits.float(), newvalue.float()
            dist = MaskedCategorical(logits, m["masks"])
            newlogprob = dist.log_prob(m["actions"])
            entropy = dist.entropy()
            logratio = newlogprob - m["logprobs"]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()  # http://joschu.net/blog/kl-approx.html
                if first_ratio_error is None:
                    first_ratio_error = (ratio - 1).abs().max().item()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
            mb_adv = m["advantages"]
            if args.norm_adv and len(mb_adv) > 1:  # a last minibatch of one row has no spread (std NaN)
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
            returns, values = m["returns"], m["values"]
            if args.clip_vloss:
                v_clipped = values + (newvalue - values).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((newvalue - returns) ** 2, (v_clipped - returns) ** 2).mean()
            else:
                v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
            entropy_loss = entropy.mean()
            loss = pg_loss - args.ent_coef * entropy_loss + args.vf_coef * v_loss
            if pull:
                with torch.no_grad(), autocast(dtype, device):
                    anchor_logits = anchor.policy_head(anchor.features(m["obs"]))
                kl_anchor = anchor_kl(MaskedCategorical(anchor_logits.float(), m["masks"]), dist).mean()
                loss = loss + args.kl_coef * kl_anchor
            if aux and hands_batch is None:
                hidden = m["states"][:, model.config.obs_dim :].view(-1, 3, NUM_CARDS)
                h_loss, h_accuracy = hands_loss(hands, hidden)
                loss = loss + args.hands_coef * h_loss
            elif aux and len(rows := hands_perm[i * share : (i + 1) * share]):
                h = minibatch(hands_batch, rows, device)
                with autocast(dtype, device):
                    hands = model.hands_head(model.features(h["obs"])).view(-1, 3, NUM_CARDS)
                h_loss, h_accuracy = hands_loss(hands.float() + h["log_uniform"], h["hidden"])
                loss = loss + args.hands_coef * h_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
        if args.target_kl and approx_kl > args.target_kl:
            break
    var_y = b["returns"].var()
    explained_var = float("nan") if var_y == 0 else float(1 - (b["returns"] - b["values"]).var() / var_y)
    return (
        {
            "losses/value_loss": v_loss.item(),
            "losses/policy_loss": pg_loss.item(),
            "losses/entropy": entropy_loss.item(),
            "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": float(np.mean(clipfracs)),
            "losses/explained_variance": explained_var,
            "losses/first_ratio_error": first_ratio_error,
        }
        | ({"losses/kl_anchor": kl_anchor.item()} if pull else {})
        | ({"losses/hands": h_loss.item(), "losses/hands_accuracy": h_accuracy.item()} if aux else {})
    )


# ---------------------------------------------------------------------- the learner


class NotFinite(ArithmeticError):
    """An iteration's numbers stopped being finite: ``what`` (the rollout's returns, the
    update's losses or weights) is not finite, or ``how`` the update failed on a number
    torch cannot hold."""

    def __init__(self, what: str, how: str = "not finite"):
        super().__init__(f"{what} {how}")
        self.what, self.how = what, how


class PPO:
    """The learner: the network and its optimizer on ``device`` (the forward passes'
    matrix products in ``dtype``, ``barbu_training.precision``), the counters, the
    opponents' pool, the KL ``anchor`` (kept only with ``kl_coef`` above 0), and one
    iteration of PPO (``iterate``). The initial weights are drawn from ``args.seed`` on the
    CPU, the same on every device. ``collector`` (a ``barbu_training.rollout.Collector``)
    plays the rollouts and ``writer`` (a TensorBoard ``SummaryWriter``) takes the scalars;
    the run (``barbu_training.run.Trainer``) sets both."""

    def __init__(
        self,
        args: Args,
        device: torch.device,
        dtype: torch.dtype = torch.float32,
        anchor: BarbuActorCritic | None = None,
    ):
        self.args, self.device, self.dtype = args, device, dtype
        torch.manual_seed(args.seed)  # the initial weights (drawn on the CPU: the same on every device)
        torch.set_num_threads(args.torch_threads)
        self.model = BarbuActorCritic(model_config(args))
        if args.belief_rows:  # the shipped belief network, frozen inside the policy
            load_belief(self.model, shipped_belief())
        self.model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.learning_rate, eps=1e-5)
        self.update_gen = torch.Generator().manual_seed(args.seed)  # the updates' minibatch shuffles
        self.iteration = self.decisions = self.next_snapshot_id = 0
        self.pool: dict[int, dict] = {}  # snapshot id -> state dict, on the CPU (their networks: on the device)
        self.start, self.minutes_before = time.time(), 0.0
        # the KL anchor: frozen, on the device; none without a KL term (the update is then the plain one)
        self.anchor = None
        if anchor is not None and args.kl_coef > 0:
            self.anchor = anchor.to(device).requires_grad_(False).eval()
        self.model.eval()
        self.timing = {  # this process's work
            "decisions": 0,
            "transitions": 0,
            "update_epochs": args.update_epochs,
            "collect_seconds": 0.0,
            "update_seconds": 0.0,
        }
        self.collector: Collector | None = None
        self.writer: Any = None

    def state(self) -> dict[str, Any]:
        """A copy of the learner's state: the weights, the optimizer, the counters, the
        pool, the update's generator and the minutes so far (the rollouts are seeded by
        the iteration)."""
        return {
            "state_dict": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "iteration": self.iteration,
            "decisions": self.decisions,
            "pool": {str(k): v for k, v in self.pool.items()},  # snapshots are never modified
            "next_snapshot_id": self.next_snapshot_id,
            "update_generator": self.update_gen.get_state(),
            "minutes": self.minutes(),
        }

    def restore(self, payload: dict[str, Any]) -> None:
        """Take everything of ``state`` but the weights from a checkpoint's ``payload``
        (``barbu_models.policy.load_checkpoint`` returns the weights as a network)."""
        self.optimizer.load_state_dict(payload["optimizer"])
        self.iteration, self.decisions = int(payload["iteration"]), int(payload["decisions"])
        self.pool = {int(k): v for k, v in payload.get("pool", {}).items()}
        self.next_snapshot_id = int(payload.get("next_snapshot_id", max(self.pool, default=-1) + 1))
        if "update_generator" in payload:  # older checkpoints: a fresh shuffle generator
            self.update_gen.set_state(payload["update_generator"])
        self.minutes_before = float(payload.get("minutes", 0.0))

    def minutes(self) -> float:
        """Minutes of training so far, earlier sessions of a resumed run included."""
        return self.minutes_before + (time.time() - self.start) / 60

    def progress(self) -> float:
        """Share of the run done: by decisions, or by time when there is a time budget."""
        done = self.decisions / self.args.total_decisions
        if self.args.time_budget_minutes:  # a resumed run's budget includes its earlier sessions
            done = max(done, self.minutes() / self.args.time_budget_minutes)
        return min(done, 1.0)

    def imitating(self, iteration: int | None = None) -> bool:
        """Whether ``iteration`` (default: the current one) belongs to the warm start."""
        return (self.iteration if iteration is None else iteration) <= self.args.bc_iterations

    def teacher(self, iteration: int) -> str:
        """The agent whose games iteration ``iteration`` imitates (the warm start's), or empty."""
        return self.args.bc_teacher if self.imitating(iteration) else ""

    def set_learning_rate(self) -> None:
        """The warm start's constant rate, else PPO's (annealed over the run if ``anneal_lr``)."""
        args, group = self.args, self.optimizer.param_groups[0]
        if self.imitating() and args.bc_learning_rate > 0:
            group["lr"] = args.bc_learning_rate
        elif args.anneal_lr:
            group["lr"] = (1.0 - self.progress()) * args.learning_rate
        else:
            group["lr"] = args.learning_rate

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the network's weights."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def collect(self, progress: Callable[[int], object] | None = None) -> Rollout:
        """This iteration's rollout (the teacher's games during the warm start), played by
        ``collector`` and seeded by the run's seed and the iteration (so that a resumed run
        plays what it would have); ``progress(decisions)`` as ``Collector.collect`` calls it."""
        rng, gen = rollout_generators(self.args.seed, self.iteration)
        return self.collector.collect(self.model, self.pool, rng, gen, self.teacher(self.iteration), progress)

    def update(self, rollout: Rollout) -> dict[str, float]:
        """Train on ``rollout``: imitation during the warm start, PPO after (with the KL
        term when there is an anchor); returns the update's stats. ``NotFinite`` if the
        rollout's returns, the losses or the weights are not finite, or if the update fails
        on a number torch cannot hold."""
        args = self.args
        self.model.train()
        batch = as_tensors(rollout, args.central_critic)
        if not (torch.isfinite(batch["returns"]).all() and torch.isfinite(batch["advantages"]).all()):
            raise NotFinite("the rollout's returns (rewards past float32's range: reward_scale times the scores)")
        update = imitation_update if self.imitating() else ppo_update
        anchor = (self.anchor,) if self.anchor is not None and not self.imitating() else ()
        extra = {}
        if args.hands_coef > 0 and args.hands_uniform and not self.imitating():
            extra["hands_batch"] = uniform_hands_batch(
                batch, args.hands_uniform, self.update_gen, self.model.config.obs_dim
            )
        try:
            stats = update(self.model, self.optimizer, batch, args, self.update_gen, self.dtype, *anchor, **extra)
        except torch.OutOfMemoryError:
            raise
        except (RuntimeError, OverflowError, FloatingPointError) as e:  # a number torch cannot hold
            raise NotFinite("the update", f"failed: {quote(' '.join(str(e).split()), 120)}") from e
        self.model.eval()
        losses = [k for k in FINITE_STATS if k in stats and not np.isfinite(stats[k])]
        if losses or not torch.stack([torch.isfinite(p).all() for p in self.model.parameters()]).all():
            raise NotFinite(f"the update's {', '.join(k.split('/')[1] for k in losses) or 'weights'}")
        return stats

    def snapshot(self) -> None:
        """Every ``snapshot_every`` iterations, a CPU copy of the weights joins the
        opponents' pool, the oldest dropped past ``pool_size``."""
        args = self.args
        if args.snapshot_every and self.iteration % args.snapshot_every == 0:
            self.pool[self.next_snapshot_id] = {k: v.to("cpu", copy=True) for k, v in self.model.state_dict().items()}
            self.next_snapshot_id += 1
            while len(self.pool) > args.pool_size:
                del self.pool[min(self.pool)]

    def log(self, rollout: Rollout, stats: dict[str, float], collect_time: float, update_time: float) -> float:
        """The iteration's scalars to ``writer`` at the decisions so far, its work to
        ``timing``; returns its decisions per second."""
        sps = rollout.decisions / (collect_time + update_time)
        self.timing["decisions"] += rollout.decisions
        self.timing["transitions"] += len(rollout.actions)
        self.timing["collect_seconds"] += collect_time
        self.timing["update_seconds"] += update_time
        scalars = {
            "charts/SPS": sps,
            "charts/collect_SPS": rollout.decisions / collect_time,
            "charts/learning_rate": self.optimizer.param_groups[0]["lr"],
            "charts/learner_score": float(np.mean(rollout.learner_scores)),
        }
        kind_scores = rollout.kind_scores
        scalars |= {
            f"charts/learner_score_{kind}": float(np.mean(kind_scores[kind]))
            for kind in GAME_KINDS
            if kind in kind_scores
        }
        for tag, value in (scalars | stats).items():
            self.writer.add_scalar(tag, value, self.decisions)
        return sps

    def iterate(self, progress: Callable[[int], object] | None = None) -> float:
        """One iteration: rollout, update, snapshot, logging. Returns its decisions per second.
        ``progress(decisions)``: the rollout's decisions so far, during the rollout (``collect``)."""
        self.iteration += 1
        self.set_learning_rate()
        t0 = time.time()
        rollout = self.collect(progress)
        collect_time = time.time() - t0
        self.decisions += rollout.decisions
        t1 = time.time()
        stats = self.update(rollout)
        update_time = time.time() - t1
        self.snapshot()
        return self.log(rollout, stats, collect_time, update_time)
