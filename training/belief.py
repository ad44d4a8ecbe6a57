"""Train the belief network (``barbu_models.belief``) by supervised learning on games whose
hands are known: ``python -m barbu_training.belief --minutes 15 --out PATH --seed 0``.

Positions. Whole games (``episode="game"``, all 28 hands, every contract) are played on the
batched engine (``VectorBarbu``) by the play driver (``barbu_env.game.driver.play``), each
seat of each game played by a kind of player drawn from ``TRAIN_MIX`` (the shipped networks,
the heuristic, random play, and sometimes a cheap ``pimc``), so that the network is not a
model of one opponent. At each decision, with probability ``record``, the observation of
the seat to act is kept with the true owner of every card it cannot see (relative seat 1,
2 or 3, from the engine: ``VectorBarbu.other_hands``). Observations are stored packed (the
18 card rows as bits, the rest float16).

Loss. The network's logits are a correction to the exact uniform marginals (``model="uniform"``
of ``barbu_env.belief``, computed for every position kept): for each unseen card, the
cross-entropy of its true owner under the softmax of the logits plus the logarithms of its
uniform marginals over the three other seats (a seat that cannot hold it: -inf). A network
that outputs zeros is the uniform sampler; it learns only what the play says beyond the
counting. Cards that are not unseen are left out; the mean is over unseen cards.

Split. Training games and validation games are seeded apart (``seed`` and ``seed + 1``); the
best network on the validation loss is kept. Its temperature (logits divided by T) is then
chosen on the validation positions (the grid ``TEMPERATURES``). The calibration
(``barbu_training.belief_calibration``) uses other seeds again.

The loop is in one function, ``train``, read top to bottom (CleanRL's style).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from barbu_env import belief
from barbu_env.agents import make_agent
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.driver import Seated, play
from barbu_env.game.observation import NUM_CARD_ROWS
from barbu_env.game.vector import VectorBarbu
from barbu_env.util.extras import needs

with needs("train", "barbu_training.belief"):
    import torch
    import torch.nn.functional as F

from barbu_models.belief import BeliefConfig, BeliefModel, BeliefNet

#: Kinds of player in the training games (one drawn per seat per game); ``pimc`` is slow,
#: so it sits in few games (``PIMC_SHARE``).
TRAIN_MIX = ("ppo", "ppo-finetuned", "ppo-expert", "heuristic", "random")
PIMC = "pimc:worlds=4"
PIMC_SHARE = 0.05
#: Temperatures tried on the validation positions.
TEMPERATURES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)
_CARD_VALUES = NUM_CARD_ROWS * NUM_CARDS


# ---------------------------------------------------------------------- positions


@dataclass
class Recorded:
    """Recorded decisions: ``cards`` uint8 [N, 117] (the observation's 18 card rows, bits),
    ``rest`` float16 [N, 196] (the other values), ``owner`` int8 [N, 52] (relative seat 1-3
    of each unseen card's holder minus 1, -1 for the cards not unseen), ``kind`` the
    player kind of the seat recorded, ``uniform`` float32 [N, 52, 3] the exact uniform
    marginals of relative seats 1-3 (``barbu_env.belief``, ``model="uniform"``)."""

    cards: np.ndarray
    rest: np.ndarray
    owner: np.ndarray
    kind: np.ndarray
    uniform: np.ndarray

    def __len__(self) -> int:
        return len(self.owner)

    def obs(self, index: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The observations float32 [n, 1132] of the positions ``index``."""
        bits = np.unpackbits(self.cards[index], axis=1, count=_CARD_VALUES).astype(np.float32)
        return np.concatenate([bits, self.rest[index].astype(np.float32)], axis=1)

    @classmethod
    def concatenate(cls, parts: list[Recorded]) -> Recorded:
        return cls(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("cards", "rest", "owner", "kind", "uniform"))
        )


class Recorder:
    """``play``'s ``decide``: asks ``inner`` (a ``Seated``), and keeps each asked decision
    with probability ``record`` (observation, the hidden cards' owners, the seat's kind)."""

    def __init__(self, env: VectorBarbu, inner: Seated, kinds: np.ndarray, record: float, rng: np.random.Generator):
        self.env, self.inner, self.kinds, self.record, self.rng = env, inner, kinds, record, rng
        self.parts: list[Recorded] = []

    def __call__(self, rows, obs, masks, seats):
        keep = self.rng.random(len(rows)) < self.record
        if keep.any():
            hidden = self.env.other_hands()[rows[keep]].reshape(-1, 3, NUM_CARDS) > 0.5  # [k, 3, 52]
            owner = np.where(hidden.any(axis=1), hidden.argmax(axis=1), -1).astype(np.int8)
            o = obs[keep]
            self.parts.append(
                Recorded(
                    np.packbits(o[:, :_CARD_VALUES] > 0.5, axis=1),
                    o[:, _CARD_VALUES:].astype(np.float16),
                    owner,
                    self.kinds[rows[keep], seats[keep]],
                    np.stack([belief.probabilities(x, model=belief.UNIFORM)[:, 1:] for x in o]).astype(np.float32),
                )
            )
        return self.inner(rows, obs, masks, seats)


def play_positions(
    table: list[list[str]], seed: int, record: float, agents: dict[str, object] | None = None
) -> Recorded:
    """The recorded positions of ``len(table)`` whole games, game g's seat s played by the
    kind ``table[g][s]`` (an agent spec); ``agents`` caches agents by spec."""
    agents = {} if agents is None else agents
    for spec in {s for row in table for s in row}:
        if spec not in agents:
            agents[spec] = make_agent(spec, seed=seed) if isinstance(spec, str) else spec
    env = VectorBarbu(len(table), seed=seed, copy=False)
    seated = Seated.per_game([[agents[s] for s in row] for row in table])
    recorder = Recorder(env, seated, np.array(table, dtype=object), record, np.random.default_rng(seed))
    play(env, recorder, start=env.reset())
    return Recorded.concatenate(recorder.parts)


def mixed_table(games: int, rng: np.random.Generator) -> list[list[str]]:
    """Seats of ``games`` games, each kind drawn from ``TRAIN_MIX`` (``pimc`` in a few)."""
    table = [[str(k) for k in rng.choice(TRAIN_MIX, size=4)] for _ in range(games)]
    for row in table:
        if rng.random() < PIMC_SHARE:
            row[int(rng.integers(4))] = PIMC
    return table


# ---------------------------------------------------------------------- the loss


def targets(p: Recorded, index: np.ndarray | slice = slice(None)):
    """(observations, owners int64 [n, 52] with -1 off the unseen cards, the uniform
    marginals' logarithms [n, 52, 3], -inf where a seat cannot hold the card)."""
    with np.errstate(divide="ignore"):
        log_uniform = np.log(p.uniform[index])
    return (
        torch.from_numpy(p.obs(index)),
        torch.from_numpy(p.owner[index].astype(np.int64)),
        torch.from_numpy(log_uniform),
    )


def belief_loss(logits: torch.Tensor, owner: torch.Tensor, log_uniform: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the unseen cards of their owner under the softmax of the
    network's correction plus the uniform marginals' logarithms (-inf: a seat that cannot
    hold the card)."""
    unseen = owner >= 0
    return F.cross_entropy((logits + log_uniform)[unseen], owner[unseen])


def uniform_loss(p: Recorded) -> float:
    """The mean log-loss per unseen card of the exact uniform marginals (``barbu_env.belief``)."""
    unseen = p.owner >= 0
    held = np.take_along_axis(p.uniform, np.maximum(p.owner, 0)[..., None].astype(np.int64), axis=2)[..., 0]
    return float(-np.log(held[unseen]).mean())


# ---------------------------------------------------------------------- training


@dataclass
class BeliefArgs:
    minutes: float = 15.0
    """Wall time in all: playing the games, then training."""
    out: Path = Path("belief.pt")
    """Where the checkpoint goes."""
    seed: int = 0
    """Training games are seeded from it, validation games from seed + 1."""
    play_share: float = 0.4
    """Share of the wall time spent playing the training games."""
    record: float = 0.05
    """Chance that a decision is kept as a position."""
    games: int = 32
    """Games played at once."""
    val_games: int = 48
    """Validation games."""
    hidden: int = 256
    """Width of the network's hidden layers."""
    dropout: float = 0.0
    """Dropout after each hidden layer."""
    lr: float = 1e-3
    """Adam's learning rate."""
    weight_decay: float = 0.0
    """AdamW's weight decay (0: Adam)."""
    batch: int = 512
    """Recorded per minibatch."""
    threads: int = 1
    """Torch threads."""


def train(args: BeliefArgs, log: Callable[[str], None] = lambda line: None) -> BeliefModel:
    """Play the games, train, choose the temperature, save; ``log`` gets a line per batch of
    games and per epoch."""
    start = time.perf_counter()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    agents: dict[str, object] = {}

    # --- validation games: the training mix, seeded apart
    val = play_positions(mixed_table(args.val_games, np.random.default_rng(args.seed + 1)), args.seed + 1, 0.1, agents)
    # --- training games, until the playing share of the wall time is spent
    parts, batch_no = [], 0
    while not parts or time.perf_counter() - start < args.play_share * args.minutes * 60:
        parts.append(play_positions(mixed_table(args.games, rng), args.seed * 1000 + 2 + batch_no, args.record, agents))
        batch_no += 1
        log(
            f"played {batch_no * args.games} games, {sum(map(len, parts))} positions, "
            f"{time.perf_counter() - start:.0f}s"
        )
    data = Recorded.concatenate(parts)
    games_played = batch_no * args.games

    # --- the network and the loop over minibatches
    net = BeliefNet(BeliefConfig(hidden=args.hidden, dropout=args.dropout))
    optimizer = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    v_obs, v_owner, v_log_uniform = targets(val)
    v_uniform = uniform_loss(val)
    log(f"validation: {len(val)} positions, uniform sampler's log-loss {v_uniform:.4f}")
    best, best_state, epoch, steps = float("inf"), None, 0, 0
    deadline = start + args.minutes * 60
    while time.perf_counter() < deadline:
        net.train()
        order = rng.permutation(len(data))
        for lo in range(0, len(order), args.batch):
            mb = np.sort(order[lo : lo + args.batch])
            mb_obs, mb_owner, mb_log_uniform = targets(data, mb)
            loss = belief_loss(net(mb_obs), mb_owner, mb_log_uniform)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if time.perf_counter() > deadline:
                break
        epoch += 1
        net.eval()
        with torch.no_grad():
            val_loss = float(belief_loss(net(v_obs), v_owner, v_log_uniform))
        log(
            f"epoch {epoch}: train loss {loss.item():.4f}, validation loss {val_loss:.4f}, "
            f"{time.perf_counter() - start:.0f}s"
        )
        if val_loss < best:
            best, best_state = val_loss, {k: v.clone() for k, v in net.state_dict().items()}
    net.load_state_dict(best_state)
    net.eval()

    # --- the temperature, on the validation positions
    with torch.no_grad():
        v_logits = net(v_obs)
        losses = [float(belief_loss(v_logits / t, v_owner, v_log_uniform)) for t in TEMPERATURES]
    temperature = TEMPERATURES[int(np.argmin(losses))]
    meta = {
        "command": command(args),
        "mix": ", ".join(TRAIN_MIX) + f", {PIMC} (in {PIMC_SHARE:.0%} of games)",
        "games": games_played,
        "positions": len(data),
        "validation_positions": len(val),
        "epochs": epoch,
        "steps": steps,
        "validation_loss": best,
        "validation_loss_uniform": v_uniform,
        "validation_loss_tempered": min(losses),
        "wall_minutes": (time.perf_counter() - start) / 60,
        "seed": args.seed,
    }
    model = BeliefModel(net, temperature, meta)
    model.save(args.out)
    log(f"saved {args.out}: temperature {temperature}, " + ", ".join(f"{k} {v}" for k, v in meta.items()))
    return model


def command(args: BeliefArgs) -> str:
    """The command line that trains with ``args`` (the options that differ from the defaults)."""
    words = ["python -m barbu_training.belief"]
    for name, default in vars(BeliefArgs()).items():
        value = getattr(args, name)
        if name in ("minutes", "out", "seed") or value != default:
            words.append(
                f"--{name.replace('_', '-')} {value:g}"
                if isinstance(value, float)
                else f"--{name.replace('_', '-')} {value}"
            )
    return " ".join(words)


def parse_args(argv: list[str] | None = None) -> BeliefArgs:
    parser = argparse.ArgumentParser(prog="python -m barbu_training.belief", description=__doc__.split("\n\n")[0])
    for name, default in vars(BeliefArgs()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return BeliefArgs(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> None:
    train(parse_args(argv), log=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
