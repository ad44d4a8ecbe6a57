"""How good the belief network's probabilities are, on games it never saw:
``python -m barbu_training.belief_calibration --games 48 --val-games 12 --seed 90001 --out belief_calibration.md``.

For each kind of player in ``KINDS`` (the four seats of every game played by it), ``games``
whole games are played from seeds derived from ``seed`` (use a seed the training never used:
training plays seeds ``1`` .. ``1000 * its seed + 2 + batches``), and decisions are recorded
as in training (``barbu_training.belief.play_positions``). For every unseen card of every
recorded position it scores the probabilities of its owner under

* the model: ``barbu_env.belief.probabilities`` (after the exact constraints), at
  temperature 1, at the temperature stored in the checkpoint (chosen on the training
  run's validation games), and with ``--val-games`` at the temperature with the least
  log-loss on validation games of every kind, unseen ones included, played from
  ``--val-seed`` (never the test seed);
* the uniform sampler's exact marginals (``model="uniform"``: what ``pimc``'s
  ``worlds.sample_worlds`` assumes);

by the log-loss (``-log p(true owner)``) and the Brier score (``sum over the three seats of
(p - 1[owner])^2``), means per unseen card, by kind, by trick (cards played in the hand // 4
+ 1; 0 before the first card) and by contract. Kinds marked *unseen* are not in the
training mix: ``heuristic-cautious`` and two crude bots written here (``lowest``: always
its lowest-ranked legal card; ``highest``: its highest), the stranger's bots the model must
still not be fooled by. It writes the tables (markdown) to ``out`` and a reliability diagram
(predicted probability of every allowed (card, seat) cell, binned, against how often the
seat held the card) to ``plot``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from barbu_env import belief
from barbu_env.agents.base import Agent
from barbu_env.evaluation.tournament.report import pyplot
from barbu_env.game.actions import NUM_ACTIONS
from barbu_env.game.cards import NUM_CARDS, NUM_RANKS
from barbu_env.game.constants import CONTRACT_NAMES
from barbu_env.game.observation import decode
from barbu_env.util.files import replacing, write_text

from .belief import play_positions

#: Kinds of player: (spec or agent name, in the training mix).
KINDS = (
    ("heuristic", True),
    ("random", True),
    ("ppo", True),
    ("ppo-expert", True),
    ("heuristic-cautious", False),
    ("lowest", False),
    ("highest", False),
)
_RANK_ORDER = np.array([c % NUM_RANKS for c in range(NUM_CARDS)] + [0] * (NUM_ACTIONS - NUM_CARDS))


class CrudeBot(Agent):
    """Plays its lowest-ranked legal card (``highest``: its highest), else the first legal action."""

    def __init__(self, highest: bool):
        self.name = "highest" if highest else "lowest"
        self.sign = -1 if highest else 1

    def act_batch(self, observations, masks):
        masks = np.asarray(masks) > 0
        cards = masks[:, :NUM_CARDS]
        key = np.where(cards, self.sign * _RANK_ORDER[:NUM_CARDS] * 64 + np.arange(NUM_CARDS), 10**6)
        return np.where(cards.any(axis=1), key.argmin(axis=1), masks.argmax(axis=1)).astype(np.int64)


def _agent(spec: str):
    return CrudeBot(spec == "highest") if spec in ("lowest", "highest") else spec


#: Temperatures tried on the validation games (``--val-games``).
TEMPERATURES = (1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5)


def choose_temperature(model, games: int, seed: int, log=lambda line: None) -> tuple[float, dict[float, float]]:
    """The temperature of ``TEMPERATURES`` with the least log-loss (after the constraints) on
    ``games`` games of every kind of ``KINDS`` played from seeds ``seed``, ``seed + 1`` ... (a
    validation split: never the test seed); and the log-loss of each."""
    losses: dict[float, list] = {t: [] for t in TEMPERATURES}
    for k, (spec, _) in enumerate(KINDS):
        positions = play_positions([[_agent(spec)] * 4] * games, seed + k, 0.05)
        obs = positions.obs()
        for i in range(len(positions)):
            unseen = np.flatnonzero(positions.owner[i] >= 0)
            owner = positions.owner[i, unseen].astype(np.int64)
            for t in TEMPERATURES:
                p = belief.probabilities(obs[i], model=type(model)(model.net, t))[unseen, 1:]
                losses[t].append(-np.log(np.maximum(p[np.arange(len(unseen)), owner], 1e-12)))
    means = {t: float(np.concatenate(v).mean()) for t, v in losses.items()}
    log("validation log-loss by temperature: " + ", ".join(f"{t:g}: {v:.4f}" for t, v in means.items()))
    return min(means, key=means.get), means


def evaluate(
    model_path: str | None,
    games: int,
    seed: int,
    plot: Path | None,
    val_games: int = 0,
    val_seed: int = 0,
    log=lambda line: None,
) -> str:
    model = belief.load_model(model_path)
    plain = type(model)(model.net, 1.0, model.meta)
    methods = {"model, T=1": plain, f"model, T={model.temperature:g}": model}
    chosen = None
    if val_games:
        t, means = choose_temperature(model, val_games, val_seed, log)
        chosen = f"Temperature chosen on {val_games} validation games per kind (seed {val_seed}): " + ", ".join(
            f"T={k:g} {v:.4f}" for k, v in means.items()
        )
        if t not in (1.0, model.temperature):
            methods[f"model, T={t:g} (validation)"] = type(model)(model.net, t)
    methods["uniform"] = belief.UNIFORM
    names = list(methods)
    cols: dict[str, list] = {"kind": [], "seen": [], "trick": [], "contract": [], "method": [], "ll": [], "brier": []}
    cells: dict[str, list] = {name: [] for name in names}
    for k, (spec, seen) in enumerate(KINDS):
        start = time.perf_counter()
        positions = play_positions([[_agent(spec)] * 4] * games, seed + k, 0.05)
        obs = positions.obs()
        for i in range(len(positions)):
            d = decode(obs[i])
            played = int(d["played"].sum())
            trick = 0 if played == 0 else played // 4 + 1
            contract = int(d["contract"].argmax()) if d["contract"].max() > 0.5 else -1
            unseen = np.flatnonzero(positions.owner[i] >= 0)
            owner = positions.owner[i, unseen].astype(np.int64)
            onehot = np.eye(3)[owner]
            for j, name in enumerate(names):
                p = belief.probabilities(obs[i], model=methods[name])[unseen, 1:]  # relative = absolute at seat 0
                cols["ll"].append(-np.log(np.maximum(p[np.arange(len(unseen)), owner], 1e-12)))
                cols["brier"].append(((p - onehot) ** 2).sum(axis=1))
                for field, value in (
                    ("kind", k),
                    ("seen", seen),
                    ("trick", trick),
                    ("contract", contract),
                    ("method", j),
                ):
                    cols[field].append(np.full(len(unseen), value))
                cells[name].append(np.stack([np.full(p.size, seen), p.ravel(), onehot.ravel()], axis=1))
        log(f"{spec}: {len(positions)} positions, {time.perf_counter() - start:.0f}s")
    c = {field: np.concatenate(v) for field, v in cols.items()}
    out = [f"Games per kind: {games}, seed {seed}. Mean per unseen card (lower is better).", ""]
    if chosen:
        out.extend([chosen + " (log-loss).", ""])

    def section(title: str, field: str, labels) -> None:
        out.extend([f"### {title}", "", "| | " + " | ".join(f"{n} log-loss | {n} Brier" for n in names) + " |"])
        out.append("|---" * (1 + 2 * len(names)) + "|")
        for value, label in labels:
            line = [label]
            for j in range(len(names)):
                sel = (c[field] == value) & (c["method"] == j)
                line += [f"{c['ll'][sel].mean():.4f}", f"{c['brier'][sel].mean():.4f}"] if sel.any() else ["", ""]
            out.append("| " + " | ".join(line) + " |")
        out.append("")

    section(
        "By kind of player",
        "kind",
        [(k, f"`{s}`" + ("" if seen else " (unseen)")) for k, (s, seen) in enumerate(KINDS)],
    )
    section("Training mix kinds vs unseen kinds", "seen", [(True, "in the mix"), (False, "unseen")])
    section(
        "By trick (all kinds)",
        "trick",
        [(t, "before play" if t == 0 else f"trick {t}") for t in np.unique(c["trick"]).tolist()],
    )
    section(
        "By contract (all kinds)",
        "contract",
        [(x, CONTRACT_NAMES[x] if x >= 0 else "not declared") for x in np.unique(c["contract"]).tolist()],
    )
    counts = {s: int(((c["kind"] == k) & (c["method"] == 0)).sum()) for k, (s, _) in enumerate(KINDS)}
    out.append("Unseen cards scored per kind: " + ", ".join(f"`{s}` {n:,}" for s, n in counts.items()) + ".")
    out.extend(["", sampler_gap(methods[names[1]], obs[:: max(1, len(obs) // 200)]), ""])
    if plot is not None:
        _reliability({name: np.concatenate(v) for name, v in cells.items()}, plot)
    return "\n".join(out) + "\n"


def sampler_gap(model, observations: np.ndarray) -> str:
    """How far the sampler's exact marginals are from the model's probabilities (mean and
    largest absolute difference per allowed cell), without fitting and with ``FIT_PASSES``
    passes, and the time ``sample_hidden`` takes for 32 deals, on ``observations``."""
    gaps = {0: [], belief.FIT_PASSES: []}
    for o in observations:
        p = belief.probabilities(o, model=model)[:, 1:]
        cells = p > 0
        for passes in gaps:
            gaps[passes].append(np.abs(belief.sampler_marginals(o, model, passes) - p)[cells])
    rng = np.random.default_rng(0)
    times = {}
    for name, m in (("model", model), ("uniform", belief.UNIFORM)):
        start = time.perf_counter()
        for o in observations:
            belief.sample_hidden(o, 32, rng, model=m)
        times[name] = (time.perf_counter() - start) / len(observations) * 1000
    lines = [f"Sampler on {len(observations)} positions (the last kind's): |marginal - model probability| per cell"]
    for passes, values in gaps.items():
        v = np.concatenate(values)
        lines.append(f"- {passes} fitting passes: mean {v.mean():.2e}, largest {v.max():.2e}")
    lines.append(
        f"- sample_hidden, 32 deals: {times['model']:.2f} ms with the model, {times['uniform']:.2f} ms uniform"
    )
    return "\n".join(lines)


def _reliability(cells: dict[str, list], path: Path) -> None:
    """The reliability diagram: two panels (training-mix kinds, unseen kinds)."""
    plt = pyplot("the reliability diagram")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
    edges = np.linspace(0, 1, 11)
    for ax, seen, title in zip(axes, (True, False), ("kinds in the training mix", "unseen kinds")):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        for name, values in cells.items():
            v = values[values[:, 0] == seen][:, 1:]
            bins = np.clip(np.digitize(v[:, 0], edges) - 1, 0, 9)
            xs = [v[bins == b, 0].mean() for b in range(10) if (bins == b).sum() >= 20]
            ys = [v[bins == b, 1].mean() for b in range(10) if (bins == b).sum() >= 20]
            ax.plot(xs, ys, marker="o", label=name)
        ax.set_title(title)
        ax.set_xlabel("predicted probability that the seat holds the card")
    axes[0].set_ylabel("observed frequency")
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as partial:
        fig.savefig(partial, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m barbu_training.belief_calibration", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--games", type=int, default=24, help="games per kind of player")
    parser.add_argument("--seed", type=int, default=90001, help="the first kind's games' seed (then seed + 1 ...)")
    parser.add_argument("--model", default=None, help="a belief checkpoint (default: the shipped one)")
    parser.add_argument("--out", type=Path, default=Path("belief_calibration.md"), help="the tables (markdown)")
    parser.add_argument("--plot", type=Path, default=Path("docs/images/belief_reliability.png"), help="the diagram")
    parser.add_argument("--val-games", type=int, default=0, help="validation games per kind to choose a temperature")
    parser.add_argument("--val-seed", type=int, default=80001, help="the validation games' first seed")
    args = parser.parse_args(argv)
    text = evaluate(args.model, args.games, args.seed, args.plot, args.val_games, args.val_seed, log=print)
    write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
