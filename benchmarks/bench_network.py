"""What a network costs: acting and training, every subject side by side in one run.

``python -m benchmarks.bench_network`` prints, on one pinned core with torch on one thread
(what a tournament's worker or a ``torch_threads: 1`` run has):

1. **acting**: decisions per second of ``act_batch`` on real positions (heuristic play),
   for a batch of 1 (one game at a time, as ``Barbu-v1``'s opponents play) and of
   ``--batch`` (a tournament job steps up to 64 games together), for ``heuristic`` (no
   network: the scale), the shipped ``ppo-expert`` (the reference of the ratios),
   ``ppo-belief`` (a privileged critic and a hands head, which acting never reads), the
   same network with the belief rows (``barbu_models.policy.with_belief_rows``: the frozen
   belief network inside the policy, as ``belief_rows: true`` trains it), and the belief
   network's own answer, ``barbu_env.belief.probabilities`` (one observation a call, the
   exact fit included);
2. **training**: samples per second of the network's part of a PPO minibatch step
   (forward, backward and an Adam step on ``--minibatch`` positions; the loss's
   bookkeeping left out) for ``default.yaml``'s network, with a hands head (``hands_coef``),
   and with the belief rows; the ratio to the first.

``--seconds`` per subject; ``--cpu-time`` times with this process's CPU time, for a busy
machine. Nothing is timed in an assertion: docs/benchmarks.md quotes the figures with the
machine they came from.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from barbu_env.util.extras import needs

with needs("train", "benchmarks.bench_network"):  # one line if the extra is missing
    import torch

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.belief import probabilities
from barbu_env.util.argtypes import OneLineParser, positive_int
from barbu_models.policy import BarbuActorCritic, PolicyConfig, hands_loss, load_checkpoint, with_belief_rows
from barbu_training.config import shipped_belief
from barbu_training.policy_agent import PolicyAgent
from benchmarks.machine import machine_info, pin_to_core


def positions(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` observations and masks of four ``heuristic`` players' games (float32 [n, 1132], bool [n, 85])."""
    env = barbu_env.env()
    players = [make_agent("heuristic", seed=seed + i) for i in range(4)]
    obs, masks, game = [], [], 0
    env.reset(seed=seed)
    while len(obs) < n:
        agent = env.agent_selection
        seen, _, done, cut, _ = env.last()
        if done or cut:
            game += 1
            env.reset(seed=seed + game)
            continue
        obs.append(seen["observation"])
        masks.append(seen["action_mask"].astype(bool))
        env.step(players[int(agent[-1])].act(seen, agent))
    return np.stack(obs).astype(np.float32), np.stack(masks)


def rate(step: Callable[[], int], seconds: float, clock: Callable[[], float]) -> float:
    """Units per second of ``step`` (which returns the units it did), repeated for at least
    ``seconds`` after one call to warm up."""
    step()
    done, start = 0, clock()
    while True:
        done += step()
        spent = clock() - start
        if spent >= seconds:
            return done / spent


def acting(obs: np.ndarray, masks: np.ndarray, batch: int, seconds: float, clock) -> list[tuple[str, float]]:
    """Decisions per second of each acting subject for batches of ``batch`` positions."""
    expert = make_agent("ppo-expert")
    belief_net, _ = load_checkpoint(checkpoint_path("ppo-belief"))
    subjects: list[tuple[str, Callable[[np.ndarray, np.ndarray], object]]] = [
        ("heuristic (no network)", make_agent("heuristic").act_batch),
        ("ppo-expert (the reference)", expert.act_batch),
        ("ppo-belief", PolicyAgent(belief_net).act_batch),
        ("ppo-belief + belief rows", PolicyAgent(with_belief_rows(belief_net, shipped_belief())).act_batch),
    ]
    out, cursor = [], [0]

    def window() -> tuple[np.ndarray, np.ndarray]:
        i = cursor[0] = (cursor[0] + batch) % (len(obs) - batch + 1)
        return obs[i : i + batch], masks[i : i + batch]

    for name, act in subjects:

        def step(act=act) -> int:
            o, m = window()
            act(o, m)
            return len(o)

        out.append((name, rate(step, seconds, clock)))
    if batch == 1:

        def ask() -> int:
            probabilities(window()[0][0], model="belief")
            return 1

        out.append(("belief probabilities (one observation)", rate(ask, seconds, clock)))
    return out


def training(obs: np.ndarray, masks: np.ndarray, minibatch: int, seconds: float, clock) -> list[tuple[str, float]]:
    """Samples per second of a forward, backward and Adam step for each network."""
    plain = BarbuActorCritic(PolicyConfig())
    nets = [
        ("default.yaml's network", plain),
        ("+ hands head", BarbuActorCritic(PolicyConfig(hands_head=1))),
        ("+ belief rows", with_belief_rows(BarbuActorCritic(PolicyConfig()), shipped_belief())),
    ]
    idx = np.random.default_rng(0).integers(0, len(obs), minibatch)
    x, m = torch.as_tensor(obs[idx]), torch.as_tensor(masks[idx])
    hands = torch.zeros(minibatch, 3, 52)
    hands[torch.arange(minibatch)[:, None], torch.randint(0, 3, (minibatch, 52)), torch.arange(52)] = 1.0
    out = []
    for name, net in nets:
        net.train()
        opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=1e-4)

        def step(net=net, opt=opt) -> int:
            logits, value, where = net.heads(x)
            logp = torch.log_softmax(logits.masked_fill(~m, -1e9), dim=-1)
            loss = -logp.max(dim=-1).values.mean() + value.square().mean()
            if where is not None:
                loss = loss + hands_loss(where, hands)[0]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return minibatch

        out.append((name, rate(step, seconds, clock)))
    return out


def table(title: str, unit: str, rows: list[tuple[str, float]], reference: str) -> str:
    ref = dict(rows)[reference]
    width = max(len(name) for name, _ in rows)
    lines = [title, f"{'subject':<{width}}  {unit:>12}  ratio to {reference.split(' (')[0]}"]
    lines += [f"{name:<{width}}  {r:>12,.0f}  {r / ref:.2f}x" for name, r in rows]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(prog="python -m benchmarks.bench_network", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per subject (default 3; 0: one round)")
    parser.add_argument("--batch", type=positive_int, default=64, help="the larger acting batch (default 64)")
    parser.add_argument("--minibatch", type=positive_int, default=4096, help="training minibatch (default 4,096)")
    parser.add_argument(
        "--positions",
        type=positive_int,
        default=2048,
        help="positions of heuristic play to act and train on, above --batch (default 2,048)",
    )
    parser.add_argument("--cpu-time", action="store_true", help="time with this process's CPU time")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the process to one core")
    args = parser.parse_args(argv)
    if args.positions <= args.batch:
        parser.error(f"--positions ({args.positions}) must exceed --batch ({args.batch})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pinned = None if args.no_pin else pin_to_core(None)
    torch.set_num_threads(1)
    clock = time.process_time if args.cpu_time else time.perf_counter
    info = machine_info(pinned)
    print(f"machine: {info['cpu']}, {info['cpus']} CPUs, pinned to core {pinned}; torch {torch.__version__}, 1 thread")
    print("clock: this process's CPU time (--cpu-time)" if args.cpu_time else "clock: wall time")
    obs, masks = positions(args.positions)
    for batch in (1, args.batch):
        rows = acting(obs, masks, batch, args.seconds, clock)
        print()
        print(table(f"acting, batch {batch}", "decisions/s", rows, "ppo-expert (the reference)"))
    print()
    rows = training(obs, masks, args.minibatch, args.seconds, clock)
    print(table(f"training step, minibatch {args.minibatch}", "samples/s", rows, "default.yaml's network"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
