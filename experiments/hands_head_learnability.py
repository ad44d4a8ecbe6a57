"""How much of where the cards are a policy network's hands head can learn, and from what.

PPO's ``hands_coef`` term (``barbu_models.policy.hands_loss``) asks the policy's trunk to say,
from the observation alone, which other seat holds each unseen card. In the 20M-decision run
of ``configs/train/ppo-belief.yaml`` (``hands_coef`` 0.1, learning rate 1e-4) its loss hardly
moved (1.095 → 1.094; ln 3 = 1.0986). This asks whether that is the lever or its dose: on
positions of whole games played by ``PLAYER`` at every seat (the training games' seed
``--seed``, held-out games' ``--seed + 1``), it fits a hands head supervised, with nothing
else in the loss, and prints one JSON line of held-out log-losses per unseen card:

- ``ln3`` (a head that knows nothing) and ``uniform`` (the exact uniform marginals of
  ``barbu_env.belief``: what counting alone knows: voids, hand sizes, cards played);
- ``belief``: the shipped belief network (a learnt correction to the uniform marginals);
- ``head``: ``PLAYER``'s network with a fresh hands head, trunk and head trained
  (``hands_loss``, Adam ``--lr``, ``--epochs`` over the training positions);
- ``head_frozen``: the same with the trunk frozen (only the head learns: what the trunk
  already encodes);
- ``head_on_uniform``: as ``head``, the head's logits added to the uniform marginals'
  logarithms (a correction to counting, as the belief network is trained).

Run: ``python -m experiments.hands_head_learnability --games 300 --seed 20261217`` (the
figures in docs/training.md).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 1, not {text}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a share above 0 and at most 1, not {text}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


def main(argv: list[str] | None = None) -> dict:
    from barbu_env.agents.pretrained import SHIPPED

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--player", default="ppo-expert", choices=sorted(SHIPPED), help="shipped network at every seat")
    parser.add_argument("--games", type=_positive_int, default=300, help="training games (held-out: a fifth as many)")
    parser.add_argument("--record", type=_share, default=0.05, help="share of decisions kept, above 0 and at most 1")
    parser.add_argument("--seed", type=int, default=20261217)
    parser.add_argument("--lr", type=_rate, default=1e-3)
    parser.add_argument("--epochs", type=_positive_int, default=8)
    parser.add_argument("--threads", type=_positive_int, default=1)
    args = parser.parse_args(argv)

    import torch

    from barbu_env import belief
    from barbu_env.agents.pretrained import pretrained_path
    from barbu_models.policy import hands_loss, load_checkpoint, with_hands_head
    from barbu_training.belief import play_positions

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    try:
        train = play_positions([[args.player] * 4] * args.games, seed=args.seed, record=args.record)
        held = play_positions([[args.player] * 4] * max(1, args.games // 5), seed=args.seed + 1, record=args.record)
    except ValueError as e:  # Recorded.concatenate of nothing
        if "at least one array" not in str(e):
            raise
        parser.error(f"no decision was recorded in {args.games} games at --record {args.record}: raise either")
    collected = time.perf_counter() - start

    def tensors(p):
        owner = torch.from_numpy(p.owner.astype(np.int64))  # [n, 52], -1 off the unseen cards
        hands = torch.zeros(len(p), 3, 52)
        unseen = owner >= 0
        rows, cards = unseen.nonzero(as_tuple=True)
        hands[rows, owner[rows, cards], cards] = 1.0
        with np.errstate(divide="ignore"):
            log_uniform = torch.from_numpy(np.log(p.uniform)).permute(0, 2, 1)  # [n, 3, 52]
        return torch.from_numpy(p.obs()), hands, log_uniform.float()

    x, y, lu = tensors(train)
    hx, hy, hlu = tensors(held)
    unseen = hy.sum(1) > 0

    def log_loss(probs: torch.Tensor) -> float:  # probs [n, 3, 52]
        picked = (probs * hy).sum(1)[unseen]
        return float(-torch.log(picked.clamp_min(1e-12)).mean())

    results = {
        "player": args.player,
        "positions": [len(train), len(held)],
        "ln3": float(np.log(3.0)),
        "uniform": log_loss(hlu.exp()),
    }
    model_b = belief.load_model()
    net = np.stack([belief.probabilities(o, model=model_b)[:, 1:] for o in hx.numpy()])  # [n, 52, 3] absolute seats 1-3
    results["belief"] = log_loss(torch.from_numpy(net).permute(0, 2, 1).float())

    def where(model, obs: torch.Tensor) -> torch.Tensor:  # the hands head on the policy's trunk (no critic)
        return model.hands_head(model.features(obs)).view(-1, 3, 52)

    def fit(frozen: bool, on_uniform: bool) -> tuple[float, float]:
        base, _ = load_checkpoint(pretrained_path(args.player))
        if base.config.hands_head:  # ppo-belief's own head is dropped: every fit starts from a fresh one
            base = with_hands_head(base, head=False)
        model = with_hands_head(base)
        params = model.hands_head.parameters() if frozen else model.parameters()
        optimizer = torch.optim.Adam(params, lr=args.lr)
        batch = 512
        for _ in range(args.epochs):
            order = torch.randperm(len(x))
            for i in range(0, len(x), batch):
                b = order[i : i + batch]
                logits = where(model, x[b])
                if on_uniform:
                    logits = logits + lu[b].clamp_min(-1e4)
                loss, _ = hands_loss(logits, y[b])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            logits = where(model, hx)
            if on_uniform:
                logits = logits + hlu.clamp_min(-1e4)
            loss, accuracy = hands_loss(logits, hy)
        return float(loss), float(accuracy)

    results["head"], results["head_accuracy"] = fit(frozen=False, on_uniform=False)
    results["head_frozen"], results["head_frozen_accuracy"] = fit(frozen=True, on_uniform=False)
    results["head_on_uniform"], results["head_on_uniform_accuracy"] = fit(frozen=False, on_uniform=True)
    results["seconds"] = {"positions": round(collected, 1), "total": round(time.perf_counter() - start, 1)}
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
