"""The trainer's arguments: the ``Args`` dataclass, YAML configs, command-line flags.

``barbu train --config configs/train/quick.yaml --seed 3`` reads a config of ``Args``
fields, then applies one ``--field`` flag per field (``load_args``, ``build_parser``).
``add_field_flags`` gives any dataclass such flags, with each field's docstring as its
help: the SB3, RLlib and TorchRL scripts use it for theirs.

Retired fields: ``rollout_engine`` and ``games_per_worker`` belonged to the per-game
rollout engine, removed (the batched engine plays the same games by the same rules);
``checkpoint_every`` (iterations) gave way to ``checkpoint_minutes``. A config that still
names the batched engine (``rollout_engine: vector``, the old default) or
``checkpoint_every`` loads with a ``FutureWarning`` and the retired fields ignored;
``rollout_engine: aec`` is an error. A value of the wrong type (``learning_rate: "fast"``)
is an error naming the field. Checkpoints keep their config as a plain dict and
resuming reads only its network shape (which must match the config's).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from barbu_env.engine import episode_hands
from barbu_env.observation import NUM_CARD_ROWS, OBS_DIM, OBS_LAYOUT, PRIVILEGED_DIM
from models.policy import PolicyConfig

#: Fields of older configs that no longer exist, with the value they may keep (any, if None).
RETIRED_FIELDS: dict[str, str | None] = {"rollout_engine": "vector", "games_per_worker": None, "checkpoint_every": None}


@dataclass
class Args:
    """A training run's settings: every field is a config key and a ``--field`` flag."""

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
    anneals over whichever runs out first; a resumed run counts its earlier sessions);
    the final evaluation comes after."""
    resume: str = ""
    """Checkpoint to resume from (weights, optimizer, counters, snapshot pool)."""
    init: str = ""
    """Checkpoint (or registered pretrained name, e.g. ``ppo``) whose weights start a new
    run: a fresh optimizer, counters and pool, its network shape the config's. Fine-tuning
    from a shipped policy; ``resume`` carries on a run instead (and wins if both are set)."""

    # --- rollouts ---
    num_games: int = 512
    """Games the batched engine (``barbu_env.vector.VectorBarbu``) steps together in the
    learner process; each rollout plays them to the end of their episode (``episode``),
    about 1,570 decisions per whole game."""
    episode: str = "game"
    """What a rollout's game is: ``game`` (all 28 hands), ``round`` (the first seven hands)
    or ``hand`` (the first hand only), the start of a whole game exactly
    (docs/rules.md#episodes); each rollout plays ``num_games`` of them. Evaluations always
    play whole games."""
    num_workers: int = 2
    """Worker processes of the duplicate evaluations (one per core)."""
    torch_threads: int = 2
    """Threads of the learner process (the rollouts' inference, the update)."""
    device: str = "auto"
    """Where the network computes, in the rollouts' inference and the update: ``auto`` (a
    CUDA GPU when there is one, else Apple's MPS, else the CPU), ``cpu``, ``cuda``,
    ``cuda:N`` or ``mps``; a device this machine lacks is an error
    (``models.device.resolve_device``). Checkpoints are saved on the CPU, so they load
    anywhere, and a resumed run carries on on this device; the duplicate evaluations play
    the checkpoints on the CPU, in ``num_workers`` processes."""
    precision: str = "auto"
    """Matrix products of the network in the rollouts and the update: ``float32``,
    ``bfloat16`` (mixed precision: bfloat16 products accumulated in float32, float32
    weights and losses), or ``auto``: bfloat16 where the device multiplies it natively
    (a CPU with AVX-512 BF16 or AMX, a CUDA GPU that supports it), else float32
    (``training.precision``)."""
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
    """Games of the final evaluation against each eval opponent (0: none; the summary
    then has no final figures)."""
    eval_seed: int = 12345
    """Seed of the periodic evaluations' deal sets (the same every time, for comparable
    points)."""
    final_eval_seed: int = 54321
    """Seed of the final evaluation's deal sets (held out from the periodic ones, which
    chose the best checkpoint)."""
    checkpoint_minutes: float = 5.0
    """Minutes between checkpoints (latest.pt, written after the iteration that passes
    the mark; 0: after every iteration; every periodic evaluation also writes one;
    best.pt follows the evaluations). A killed run loses at most this much work plus one
    iteration; Ctrl-C loses only the iteration under way."""
    progress: bool = True
    """Show a progress bar."""

    def __post_init__(self) -> None:
        episode_hands(self.episode)  # an unknown episode mode is an error naming the modes
        for name in ("eval_games", "final_eval_games"):  # checked now, not after the training
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}")
        if self.eval_every and self.eval_games < 1:
            raise ValueError(f"eval_every {self.eval_every} needs eval_games of at least 1, not {self.eval_games}")


def load_args(config: str | None = None, overrides: dict[str, Any] | None = None) -> Args:
    """Args from a YAML file and overrides; an unknown field is an error, a retired one
    is dropped with a warning (see the module docstring)."""
    values: dict[str, Any] = {}
    if config:
        try:
            data = yaml.safe_load(Path(config).read_text()) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"{config}: not YAML ({' '.join(str(e).split())})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{config}: a training config is a mapping of fields")
        values.update(data)
    values.update(overrides or {})
    retired = sorted(set(values) & set(RETIRED_FIELDS))
    for name in retired:
        value, kept = values.pop(name), RETIRED_FIELDS[name]
        if kept is not None and value != kept:
            raise ValueError(
                f"{name}: {value!r} is no longer available; the trainer always uses the batched "
                f"engine ({name}: {kept!r}): remove the field"
            )
    if retired:
        warnings.warn(
            f"training field(s) {retired} are retired and ignored (the batched engine is the only rollout "
            f"engine; checkpoints are timed by checkpoint_minutes): remove them from the config",
            FutureWarning,
            stacklevel=2,
        )
    known = {f.name for f in dataclasses.fields(Args)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown training field(s) {unknown}; known fields: {sorted(known)}")
    where = f"{config}: " if config else ""
    return Args(**{name: _typed(name, value, where) for name, value in values.items()})


#: The values a field of each declared type accepts (an int is a float; a bool is neither).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


def _typed(name: str, value: Any, where: str = "") -> Any:
    """``value`` for the Args field ``name``, or a ValueError naming the field and the type
    it wants (YAML reads ``fast`` as a string, ``1e-3`` as a string, ``yes`` as a bool)."""
    declared = Args.__dataclass_fields__[name].type
    ok = isinstance(value, _FIELD_TYPES[declared]) and not (declared != "bool" and isinstance(value, bool))
    if declared == "float" and isinstance(value, str):  # YAML 1.1 reads 3e-4 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    if not ok:
        raise ValueError(f"{where}{name} must be {declared}, not {value!r}")
    return float(value) if declared == "float" else value


def model_config(args: Args) -> PolicyConfig:
    """The network the run trains (with a privileged critic's input if ``central_critic``)."""
    return PolicyConfig(
        obs_dim=OBS_DIM,
        card_rows=NUM_CARD_ROWS,
        obs_layout=OBS_LAYOUT,
        hidden=args.hidden,
        layers=args.layers,
        card_embed=args.card_embed,
        state_dim=PRIVILEGED_DIM if args.central_critic else 0,
    )


# ---------------------------------------------------------------------- command line


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass, read from its source."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def add_field_flags(parser: argparse.ArgumentParser, cls: type, defaults: bool = True) -> argparse.ArgumentParser:
    """One ``--field`` per field of the dataclass ``cls`` (int, float, str or bool), its
    docstring as help; without ``defaults`` an absent flag is left out of the namespace
    (so that a config file can fill it)."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        kind = {"int": int, "float": float, "str": str, "bool": _bool}[f.type]
        parser.add_argument(
            "--" + f.name.rstrip("_").replace("_", "-"),
            dest=f.name,
            type=kind,
            default=f.default if defaults else argparse.SUPPRESS,
            help=f"{docs.get(f.name, '')} (default {f.default!r})".replace("%", "%%"),
        )
    return parser


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``barbu train``'s command line: ``--config FILE`` plus one ``--field`` per Args
    field (overrides the config)."""
    parser = parser or argparse.ArgumentParser(
        prog="barbu train", description="Self-play PPO for Barbu, one shared masked policy for all four seats."
    )
    parser.add_argument("--config", help="YAML file of Args fields (configs/train/*.yaml)")
    return add_field_flags(parser, Args, defaults=False)
