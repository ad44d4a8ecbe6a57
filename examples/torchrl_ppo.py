"""TorchRL on the AEC environment: ``PettingZooWrapper(use_mask=True)``, a collection, a PPO update.

Needs the ``torchrl`` extra: ``pip install -c constraints.txt -e ".[torchrl]"``.

A short, readable example of the pieces a TorchRL pipeline needs, not a training
recipe (``barbu train`` is that). Read top to bottom:

1. Environment: ``PettingZooWrapper(barbu_env.env(), use_mask=True, group_map=...)``
   puts the four seats in one group ``"players"``, so that one network plays them
   all. For an AEC environment ``use_mask=True`` is required: at each step only one
   seat acts, and ``("players", "mask")`` tells which. ``("players", "action_mask")``
   holds the legal actions of the seat to act (all true for the others).
2. Policy: a ``ProbabilisticActor`` with TorchRL's ``MaskedCategorical`` reading
   ``("players", "action_mask")``; the network is ``barbu_models.policy.BarbuActorCritic``,
   so the result is an ordinary checkpoint for ``barbu eval``.
3. Collection: a ``Collector`` gathers ``frames`` steps (a game is about
   1,600).
4. Credit: TorchRL records each step's rewards for every seat, the seats not acting
   included, and a hand usually ends on another seat's card. So the rewards of a seat
   are summed from each of its decisions to its next one (or the end of the game: the
   rule of ``barbu_env.game.credit``), and
   GAE (TorchRL's ``generalized_advantage_estimate``) runs along each seat's own
   decisions. Keeping only the rewards of the steps where the seat acted
   (``("players", "mask")``) would drop most of its hand scores.
5. Update: TorchRL's ``ClipPPOLoss`` over the seats' decisions, one epoch of
   minibatches; the network is saved with ``barbu_models.policy.save_checkpoint``::

    python -m examples.torchrl_ppo --frames 4000 --out runs/torchrl
    barbu eval --agents runs/torchrl/policy.pt,random,random,random --games 100

Every field of ``Args`` is a flag (``--frames 2000``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import barbu_env
from barbu_env.util.extras import MissingExtraError, needs

try:
    with needs("torchrl", "examples.torchrl_ppo", package="torchrl"):  # one line if the extra is missing
        import torch
        from tensordict import TensorDict
        from tensordict.nn import TensorDictModule
        from torch import nn
        from torchrl.collectors import Collector
        from torchrl.envs import PettingZooWrapper
        from torchrl.modules import MaskedCategorical, ProbabilisticActor
        from torchrl.objectives import ClipPPOLoss
        from torchrl.objectives.value.functional import generalized_advantage_estimate
except MissingExtraError as e:  # run as a script: the one line, without a traceback
    if __name__ != "__main__":
        raise
    raise SystemExit(e) from None

from barbu_env.game.actions import AGENTS
from barbu_env.game.credit import NO_DECISION, credit_steps
from barbu_models.policy import BarbuActorCritic, PolicyConfig, save_checkpoint
from barbu_training.config_cli import add_field_flags

GROUP = "players"
OBS = (GROUP, "observation", "observation")  # the dict observation's vector, nested by TorchRL
ACTION_MASK = (GROUP, "action_mask")
AGENT_MASK = (GROUP, "mask")  # which seat acts at this step (use_mask=True)
ACTION = (GROUP, "action")
LOG_PROB = (GROUP, "action_log_prob")
VALUE = (GROUP, "state_value")


@dataclass
class Args:
    frames: int = 4000
    """Environment steps (decisions, all seats) to collect."""
    minibatch_size: int = 512
    """Decisions per gradient step of the update."""
    lr: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.995
    """Discount per decision of the same seat."""
    lmbda: float = 0.95
    """GAE lambda."""
    clip_epsilon: float = 0.2
    """PPO ratio clip."""
    entropy_coef: float = 0.01
    """Entropy bonus weight."""
    reward_scale: float = 0.01
    """Factor on the settled hand scores (points) to make rewards."""
    rules: str = "standard"
    """Rules preset or YAML path."""
    seed: int = 0
    """Seed of the environment and the network."""
    out: str = "runs/torchrl"
    """Folder for ``policy.pt``."""


# ---------------------------------------------------------------------- environment and modules


def make_env(args: Args) -> PettingZooWrapper:
    """The AEC environment in TorchRL, the four seats in one group, with the acting-seat mask."""
    return PettingZooWrapper(barbu_env.env(rules=args.rules), use_mask=True, group_map={GROUP: list(AGENTS)})


class Logits(nn.Module):
    def __init__(self, model: BarbuActorCritic):
        super().__init__()
        self.model = model

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        flat = obs.reshape(-1, obs.shape[-1])
        return self.model(flat)[0].reshape(*obs.shape[:-1], -1)


class Value(nn.Module):
    def __init__(self, model: BarbuActorCritic):
        super().__init__()
        self.model = model

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        flat = obs.reshape(-1, obs.shape[-1])
        return self.model(flat)[1].reshape(*obs.shape[:-1], 1)


def make_modules(model: BarbuActorCritic) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The masked actor and the critic, both on ``model``."""
    actor = ProbabilisticActor(
        TensorDictModule(Logits(model), in_keys=[OBS], out_keys=[(GROUP, "logits")]),
        in_keys={"logits": (GROUP, "logits"), "mask": ACTION_MASK},
        out_keys=[ACTION],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=LOG_PROB,
    )
    critic = TensorDictModule(Value(model), in_keys=[OBS], out_keys=[VALUE])
    return actor, critic


# ---------------------------------------------------------------------- per-seat credit


def credit_by_seat(acting: torch.Tensor, rewards: torch.Tensor, game_over: torch.Tensor) -> list[dict]:
    """Each seat's decisions with their outcomes, from steps ``[T]`` of the collection:
    ``acting[T, seats]`` (which seat acted), ``rewards[T, seats]`` (every seat's reward at
    each step), ``game_over[T]``. Per seat: ``times`` of its decisions, ``rewards`` (the
    sum of its rewards from each decision to its next one or to the end of the game),
    ``ended`` (the game ended before its next decision) and ``next_times`` (its next
    decision, -1 where the game ended). A last decision whose outcome the collection does
    not reach yet is left out.

    >>> acting = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1]]).bool()
    >>> rewards = torch.tensor([[0, 0], [0, 0], [1, 2], [3, 4], [0, 0], [5, 6]]).float()
    >>> game_over = torch.tensor([0, 0, 0, 1, 0, 0]).bool()  # a new game starts at step 4
    >>> credit = credit_by_seat(acting, rewards, game_over)
    >>> [(c["times"], c["rewards"].tolist(), c["ended"], c["next_times"]) for c in credit]
    [([0, 2], [0.0, 4.0], [False, True], [2, -1]), ([1, 3], [2.0, 4.0], [False, True], [3, -1])]
    """
    acting = acting.bool()
    deciders = torch.where(acting.any(-1), acting.float().argmax(-1), NO_DECISION).numpy()
    credit = credit_steps(deciders, rewards.detach().double().numpy(), game_over.bool().numpy())
    out = []
    for seat in range(acting.shape[1]):
        times = np.flatnonzero((deciders == seat) & credit.complete)
        out.append(
            {
                "times": times.tolist(),
                "rewards": torch.as_tensor(credit.rewards[times], dtype=rewards.dtype),
                "ended": credit.ended[times].tolist(),
                "next_times": credit.next_step[times].tolist(),
            }
        )
    return out


def seat_decisions(batch: TensorDict, critic: TensorDictModule, args: Args) -> TensorDict:
    """The collected steps as one row per decision of a seat whose outcome is known, with
    its advantage and value target: GAE along the seat's own decisions
    (``credit_by_seat``; see the module docstring, point 4)."""
    acting = batch[AGENT_MASK]  # [T, 4]
    rewards = args.reward_scale * batch["next", GROUP, "reward"][..., 0]  # [T, 4]: every seat, acting or not
    with torch.no_grad():
        values = critic(batch.select(OBS).clone())[VALUE][..., 0]  # [T, 4]
    t_idx, s_idx, advantages, targets = [], [], [], []
    for seat, c in enumerate(credit_by_seat(acting, rewards, batch["next", "done"].reshape(-1))):
        if not c["times"]:
            continue
        next_value = torch.stack([values[n, seat] if n >= 0 else torch.tensor(0.0) for n in c["next_times"]])
        adv, target = generalized_advantage_estimate(
            args.gamma,
            args.lmbda,
            values[c["times"], seat].unsqueeze(-1),
            next_value.unsqueeze(-1),
            c["rewards"].unsqueeze(-1),
            torch.tensor(c["ended"]).unsqueeze(-1),
        )
        t_idx += c["times"]
        s_idx += [seat] * len(c["times"])
        advantages.append(adv)
        targets.append(target)
    t_idx, s_idx = torch.tensor(t_idx), torch.tensor(s_idx)
    return TensorDict(
        {
            OBS: batch[OBS][t_idx, s_idx],
            ACTION_MASK: batch[ACTION_MASK][t_idx, s_idx],
            ACTION: batch[ACTION][t_idx, s_idx],
            LOG_PROB: batch[LOG_PROB][t_idx, s_idx],
            "advantage": torch.cat(advantages),
            "value_target": torch.cat(targets),
        },
        batch_size=[len(t_idx)],
    )


# ---------------------------------------------------------------------- collect, update, save


def run(args: Args) -> dict:
    """One collection and one PPO epoch; saves ``out/policy.pt``; returns a summary."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # one game, one decision at a time: threads only add overhead
    env = make_env(args)
    env.set_seed(args.seed)
    model = BarbuActorCritic(PolicyConfig())
    actor, critic = make_modules(model)
    start = time.monotonic()
    collector = Collector(
        env, actor, frames_per_batch=args.frames, total_frames=args.frames, auto_register_policy_transforms=False
    )
    batch = next(iter(collector))
    collector.shutdown()
    collect_seconds = time.monotonic() - start

    data = seat_decisions(batch, critic, args)
    loss_module = ClipPPOLoss(actor, critic, clip_epsilon=args.clip_epsilon, entropy_coeff=args.entropy_coef)
    loss_module.set_keys(action=ACTION, sample_log_prob=LOG_PROB, value=VALUE)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    for idx in torch.randperm(len(data)).split(args.minibatch_size):
        out = loss_module(data[idx])
        loss = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    out_path = Path(args.out) / "policy.pt"
    save_checkpoint(out_path, model, trained_with="torchrl", frames=args.frames)
    return {
        "frames": int(batch.numel()),
        "decisions": len(data),
        "games_finished": int(batch["next", "done"].sum()),
        "collect_seconds": round(collect_seconds, 1),
        "minibatches": len(losses),
        "mean_loss": sum(losses) / len(losses),
        "policy": str(out_path),
    }


def build_parser() -> argparse.ArgumentParser:
    """One ``--field`` per ``Args`` field."""
    parser = argparse.ArgumentParser(prog="python -m examples.torchrl_ppo", description=__doc__.split("\n\n")[0])
    return add_field_flags(parser, Args)


def main(argv: list[str] | None = None) -> int:
    args = Args(**vars(build_parser().parse_args(argv)))
    summary = run(args)
    print(
        f"TorchRL: collected {summary['frames']:,} steps ({summary['games_finished']} games finished) in "
        f"{summary['collect_seconds']} s; one PPO epoch over {summary['decisions']:,} seat decisions "
        f"({summary['minibatches']} minibatches, mean loss {summary['mean_loss']:.3f}); saved {summary['policy']}"
    )
    print(f"evaluate: barbu eval --agents {summary['policy']},random,random,random --games 100")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
