"""Refit the heuristic's hand-value models and print the tables it would store.

The ``heuristic`` agent (``barbu_env/agents/heuristic.py``) values a hand per contract
with two linear models of hand features (``_heuristic_kernels.FEATURE_NAMES``): the
expected raw score of the hand's holder (``WEIGHTS``) and, when not declaring, that score
minus the declarer's (``WEIGHTS_VS_DECLARER``). This script replays how they were made:

1. games of one heuristic against three random players (the heuristic in each seat in
   turn), the heuristic declaring a *random* legal contract (so that every contract is
   seen with every kind of hand) and playing everything else by its rules;
2. for every hand, the heuristic's dealt hand, features computed as the agent computes
   them (the contract's trump suit / starting rank as declared), and the raw scores;
3. per contract, ridge regression (the intercept not penalised) of the heuristic's raw
   score on the features (``WEIGHTS``) and, on the hands it did not declare, of its raw
   score minus the declarer's (``WEIGHTS_VS_DECLARER``);
4. ``AVERAGE``: the heuristic's mean raw score as declarer per contract; ``SPREAD``: the
   standard deviation of the declaring value (``WEIGHTS`` as declarer, less ``AVERAGE``)
   over random hands; ``EXPECTED_MAX``: the expected maximum of n standard normal draws.

It prints the tables in the form ``heuristic.py`` stores them, and how far each is from
the stored one; it stores nothing. The stored tables came from an offline run of this
procedure whose sample size and ridge penalty were not recorded: a refit gives close,
not identical, weights (and a refit heuristic plays differently, so that the tables feed
back into the games they are fitted on).

    python -m experiments.fit_hand_values              # 2,000 games, about a minute
    python -m experiments.fit_hand_values --full       # 20,000 games, about ten minutes
"""

from __future__ import annotations

import argparse
import math
import textwrap
import time

import numpy as np

from barbu_env.agents import _heuristic_kernels as HK
from barbu_env.agents import heuristic as H
from barbu_env.agents import make_agent
from barbu_env.game.actions import DECLARE_OFFSET, mask_array
from barbu_env.game.constants import CONTRACT_NAMES, Phase
from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import Rules, load_rules

QUICK_GAMES = 2_000
FULL_GAMES = 20_000


def hand_features(hand: int, contract: int, declarer: bool, trump: int, rank: int, fp: np.ndarray) -> np.ndarray:
    """The agent's features of a hand (the kernels' own ``_hand_features``)."""
    feat = np.empty(HK.NUM_FEATURES)
    HK._hand_features(fp, feat, np.uint64(hand), contract, declarer, trump, rank)
    return feat


def play(num_games: int, rules: Rules, seed: int) -> tuple[list, list]:
    """Rows (contract, features, raw score) for the heuristic's hands, and rows (contract,
    features, own raw score - declarer's) for the hands it did not declare."""
    rng = np.random.default_rng(seed)
    fp = H.kernel_params(rules)[1]
    raw_rows, vs_rows = [], []
    for g in range(num_games):
        me = g % 4
        agents = [
            make_agent("heuristic" if s == me else "random", seed=seed + 4 * g + s, rules=rules) for s in range(4)
        ]
        state = BarbuState.new_game(rules, np.random.default_rng(rng.integers(2**63)))
        while not state.is_terminal:
            seat = state.current_player
            if seat == me and state.phase == Phase.DECLARE:
                legal = [a for a in state.legal_actions() if DECLARE_OFFSET <= a < DECLARE_OFFSET + HK.NUM_CONTRACTS]
                action = int(rng.choice(legal))
            else:
                obs = {"observation": state.observe(seat), "action_mask": mask_array(state.legal_mask())}
                action = agents[seat].act(obs, f"player_{seat}")
            result = state.apply_action(action)
            if result is None:
                continue
            c = CONTRACT_NAMES.index(result.contract)
            trump = -1 if result.trump is None else result.trump
            rank = -1 if result.starting_rank is None else result.starting_rank
            declaring = result.declarer == me
            f = hand_features(result.dealt[me], c, declaring, trump, rank, fp)
            raw_rows.append((c, f, result.raw[me]))
            if not declaring:
                vs_rows.append((c, f, result.raw[me] - result.raw[result.declarer]))
    return raw_rows, vs_rows


def ridge(x: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    """Least squares with ``penalty`` x the squared weights, the intercept (column 0) free."""
    d = np.full(x.shape[1], penalty)
    d[0] = 0.0
    return np.linalg.solve(x.T @ x + np.diag(d), x.T @ y)


def fit(rows: list, penalty: float) -> np.ndarray:
    """Weights [7, NUM_FEATURES], one ridge regression per contract."""
    weights = np.zeros((HK.NUM_CONTRACTS, HK.NUM_FEATURES))
    for c in range(HK.NUM_CONTRACTS):
        x = np.array([f for k, f, _ in rows if k == c]).reshape(-1, HK.NUM_FEATURES)
        y = np.array([v for k, _, v in rows if k == c], dtype=np.float64)
        if len(y):
            weights[c] = ridge(x, y, penalty)
    return weights


def spread(weights: np.ndarray, rules: Rules, num_hands: int, seed: int) -> np.ndarray:
    """Standard deviation of the declaring model's value over random hands, per contract."""
    rng = np.random.default_rng(seed)
    fp = H.kernel_params(rules)[1]
    values = np.zeros((num_hands, HK.NUM_CONTRACTS))
    for k in range(num_hands):
        hand = sum(1 << int(c) for c in rng.choice(52, 13, replace=False))
        for c in range(HK.NUM_CONTRACTS):
            values[k, c] = weights[c] @ hand_features(hand, c, True, -1, -1, fp)
    return values.std(axis=0)


def expected_max(n: int, steps: int = 20_000) -> float:
    """E[max of n standard normal draws] (0 for n < 2), by the trapezoid rule on [-10, 10]."""
    if n < 2:
        return 0.0
    xs = np.linspace(-10.0, 10.0, steps)
    phi = np.exp(-0.5 * xs**2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(x / math.sqrt(2)) for x in xs]))
    return float(np.trapezoid(xs * n * phi * cdf ** (n - 1), xs))


def table(name: str, weights: np.ndarray, comment: str) -> str:
    """A weights table as heuristic.py stores it."""
    lines = [f"#: {comment}", f"{name} = ("]
    for c, row in enumerate(weights):
        lines.append(f"    (  # {CONTRACT_NAMES[c]}")
        lines += textwrap.wrap(
            ", ".join(f"{w:.3f}" for w in row), 112, initial_indent=" " * 8, subsequent_indent=" " * 8
        )
        lines.append("    ),")
    lines.append(")")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.fit_hand_values", description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=QUICK_GAMES, help=f"games to fit on (default {QUICK_GAMES})")
    parser.add_argument("--full", action="store_true", help=f"the full fit: {FULL_GAMES} games")
    parser.add_argument("--penalty", type=float, default=1.0, help="ridge penalty (default 1.0)")
    parser.add_argument("--spread-hands", type=int, default=5_000, help="random hands for SPREAD (default 5000)")
    parser.add_argument("--rules", default="standard", help="rules preset or file (default standard)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    games = FULL_GAMES if args.full else args.games
    rules = load_rules(args.rules)
    start = time.perf_counter()
    raw_rows, vs_rows = play(games, rules, args.seed)
    weights = fit(raw_rows, args.penalty)
    vs_weights = fit(vs_rows, args.penalty)
    average = [float(np.mean([v for c2, f, v in raw_rows if c2 == c and f[HK.F_DECLARER]] or [0.0])) for c in range(7)]
    spreads = spread(weights, rules, args.spread_hands, args.seed + 1)
    maxima = [expected_max(n) for n in range(HK.NUM_CONTRACTS)]
    print(f"# {games} games ({len(raw_rows)} hands) under {args.rules}, ridge penalty {args.penalty}, "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    print("# fmt: off")
    print(table("WEIGHTS", weights, "Linear weights of the expected-raw-score model per contract."))
    print(table("WEIGHTS_VS_DECLARER", vs_weights, "The same for (own raw score - declarer's raw score)."))
    print("# fmt: on")
    print("AVERAGE = (" + ", ".join(f"{v:.2f}" for v in average) + ")")
    print("SPREAD = (" + ", ".join(f"{v:.2f}" for v in spreads) + ")")
    print("EXPECTED_MAX = (" + ", ".join(f"{v:.3f}" for v in maxima) + ")")
    print("# largest difference from the stored tables:")
    for name, new in (
        ("WEIGHTS", weights),
        ("WEIGHTS_VS_DECLARER", vs_weights),
        ("AVERAGE", average),
        ("SPREAD", spreads),
        ("EXPECTED_MAX", maxima),
    ):
        print(f"#   {name}: {np.max(np.abs(np.asarray(new) - np.asarray(getattr(H, name)))):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
