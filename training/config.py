"""The trainer's arguments: the ``Args`` dataclass, YAML configs, command-line flags.

``barbu train --config configs/train/quick.yaml --seed 3`` reads a config of ``Args``
fields, then applies one ``--field`` flag per field (``load_args``, ``build_parser``).
``add_field_flags`` gives any dataclass such flags, with each field's docstring as its
help: the SB3, RLlib and TorchRL scripts use it for theirs.

A field ``Args`` does not have is an error naming it, and so is a value of the wrong type
(``learning_rate: "fast"``). Checkpoints keep their config as a plain dict and resuming
reads only its network shape (which must match the config's).

A config may be a chain of runs (``stages``: a list of changes to the fields above, run in
order by one ``barbu train``): ``stage_args`` gives each stage's ``Args`` — the top level,
then the stage's own fields, then the command line's flags, which win over both (but for
``exp_name``, ``init`` and ``resume``, the chain's: the base name, the first stage's start,
the chain's resume) — each stage after the first starting from the previous stage's
``latest.pt`` (or ``best.pt``: ``init_from``) unless it names its own ``init``, each named
``<exp_name>-<k>`` unless it names itself. Every stage is checked when the ``Args`` is made,
so a typo in the last stage is an error before the first one runs.

Every field has a range of valid values (``VALID``: said by its docstring, so by
``--help``, and by the table in docs/training.md). Types are strict (a bool is no int,
text is no number but for the exponent form PyYAML leaves as text, ``3e-4``), floats
finite, sizes bounded by what a machine can hold. ``Args`` checks the fields when it is
made; ``prepare`` checks what needs the machine or the files (rules, device, precision,
agents, the checkpoint to resume or start from, memory). Both raise ``ConfigError``, a
ValueError of one line naming the field, which the trainer raises before it touches the
run folder.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import math
import os
import re
import reprlib
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from barbu_env.agents.registry import split_agent_specs
from barbu_env.game.observation import NUM_CARD_ROWS, OBS_DIM, OBS_LAYOUT, PRIVILEGED_DIM
from barbu_env.util.files import InputError, quote, read_text, safe_yaml
from barbu_models.policy import SIZE_LIMITS, PolicyConfig
from barbu_training.precision import PRECISIONS

# ---------------------------------------------------------------------- valid values


class ConfigError(ValueError):
    """A training config that cannot run: one line naming the field(s), what they may be
    and the value given (``barbu train`` prints it and exits 1, before anything on disk is
    touched)."""


@dataclass(frozen=True)
class Valid:
    """The values a field takes: ``kind`` (``int``, ``float``, ``bool``, ``str`` or ``list``,
    a list of mappings: ``stages``; or ``expert``, a mapping of expert-iteration fields); numbers
    from ``low`` to ``high`` (``low`` itself excluded if ``above``; no ``high``: any finite
    number), text one of ``choices`` or as ``text`` says (checked by ``prepare`` where that
    needs the machine or the files)."""

    kind: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    choices: tuple[str, ...] = ()
    text: str = ""

    def describe(self) -> str:
        """The valid values in words (the docstrings, ``--help``, errors and docs/training.md say it)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "str":
            return self.text or "one of " + ", ".join(self.choices)
        if self.kind in ("list", "expert"):
            return self.text
        if self.kind == "int":
            return f"an integer from {_number(self.low)} to {_number(self.high)}"
        if self.above:
            return f"a number above {_number(self.low)}" + (
                f", at most {_number(self.high)}" if self.high is not None else " (finite)"
            )
        if self.high is None:
            return f"a finite number of at least {_number(self.low)}"
        return f"a number from {_number(self.low)} to {_number(self.high)}"

    def check(self, name: str, value: Any) -> Any:
        """``value`` as the field's type (an int is a float; a bool is no number, a string
        is none: types are strict; a list's items are mappings, copied), or a ConfigError
        naming the field and its range."""
        if self.kind == "list":
            if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
                raise ConfigError(f"{name} must be {self.describe()}, not {_show(value)}")
            return [dict(item) for item in value]
        if self.kind == "expert":
            return _expert_fields(name, value)
        ok = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}[self.kind]
        if not isinstance(value, ok) or (self.kind != "bool" and isinstance(value, bool)):
            raise ConfigError(f"{name} must be {self.describe()}, not {_show(value)}")
        if self.kind == "float":
            try:
                value = float(value)
            except OverflowError:  # an integer past float's range
                raise ConfigError(f"{name} must be {self.describe()}, not {_show(value)}") from None
        if self.kind in ("int", "float"):
            low_ok = value > self.low if self.above else value >= self.low
            high_ok = value <= self.high if self.high is not None else math.isfinite(value)
            if not (low_ok and high_ok):  # NaN fails both
                raise ConfigError(f"{name} must be {self.describe()}, not {_show(value)}")
        if self.choices and value not in self.choices:
            raise ConfigError(f"{name} must be {self.describe()}, not {_show(value)}")
        return value


def _expert_fields(name: str, value: Any) -> dict:
    """``value``, an ``expert`` mapping, copied, each field checked as ``ExpertArgs`` checks
    it; a ConfigError naming the field otherwise (an ``ExpertArgs`` field the run sets
    itself, from its own ``init``, ``seed``, ..., is refused)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be {VALID[name].describe()}, not {_show(value)}")
    if not value:
        return {}
    from barbu_training.expert import EXPERT_VALID, FROM_THE_RUN

    checked = {}
    for key, item in value.items():
        if key in FROM_THE_RUN:
            raise ConfigError(f"{name}: {_show(key)} is the run's {FROM_THE_RUN[key]}, not a field of {name}")
        if key not in EXPERT_VALID:
            raise ConfigError(f"{name}: unknown expert-iteration field {_show(key)} (barbu_training.expert.ExpertArgs)")
        checked[key] = EXPERT_VALID[key].check(f"{name}: {key}", item)
    return checked


def _number(x: float | None) -> str:
    if x is None:
        return ""
    x = int(x) if float(x).is_integer() else x
    return f"{x:,}" if isinstance(x, int) and abs(x) >= 10_000 else str(x)


def _show(value: Any) -> str:
    """A value as an error message shows it: its repr, cut short, on one line."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = shown.maxlong = 40
    try:
        return shown.repr(value)
    except ValueError:  # an integer past Python's digits limit for str()
        return f"an integer of {value.bit_length()} bits"


def _int(low: int, high: int) -> Valid:
    return Valid("int", low, high)


def _num(low: float, high: float | None = None, above: bool = False) -> Valid:
    return Valid("float", low, high, above)


_BOOL = Valid("bool")
#: Seeds: numpy's and torch's generators take any of these.
_SEED = _int(0, 2**32 - 1)
_AGENTS = "agent specs separated by commas (registered names or checkpoint paths, with parameters)"

#: Every field's valid values (docs/training.md has them as a table; how the bounds were
#: chosen is there too). Upper bounds keep a run inside what a machine can hold: the
#: rollout buffers (``num_games``), the networks (``hidden``, ``layers``, ``card_embed``,
#: ``pool_size``), a minibatch's activations; ``prepare`` also compares the whole estimate
#: with this machine's memory. The network's sizes are ``barbu_models.policy.SIZE_LIMITS``, the
#: bounds a checkpoint's network is checked against too. Every float field's range is one
#: the update survives: each value in it trains, or stops the run with ``TrainingDiverged``
#: and its last whole iteration kept (a ``reward_scale`` that sends rewards past float32's
#: range does); none makes it fail (the clip's bounds are converted to float32, so
#: ``clip_coef`` is at most 10, a clip no run needs more of).
VALID: dict[str, Valid] = {
    "exp_name": Valid("str", text="a folder name (not empty, no slashes, not . or ..)"),
    "run_dir": Valid("str", text="a folder path, not empty"),
    "seed": _SEED,
    "rules": Valid("str", text="a rules preset or a rules YAML file"),
    "total_decisions": _int(1, 10**15),
    "time_budget_minutes": _num(0, 10**6),
    "resume": Valid("str", text="empty, auto (the run's own latest.pt), or a checkpoint file"),
    "init": Valid("str", text="empty, a shipped policy (ppo, ppo-finetuned) or a checkpoint file"),
    "stages": Valid("list", text="a list of mappings of training fields (and init_from), or empty"),
    "expert": Valid(
        "expert",
        text="empty, or a mapping of expert-iteration fields (barbu_training.expert.ExpertArgs: worlds, games, ...)",
    ),
    "num_games": _int(1, 16_384),
    "episode": Valid("str", choices=("game", "round", "hand")),
    "num_workers": _int(1, 1024),
    "torch_threads": _int(1, 1024),
    "device": Valid("str", text="auto, cpu, cuda, cuda:N or mps, one this machine has"),
    "precision": Valid("str", choices=PRECISIONS),
    "skip_forced": _BOOL,
    "workers": _int(0, 1024),
    "ray_address": Valid("str", text="empty (a local Ray), auto (the running cluster) or a cluster's address"),
    "worker_resource": Valid("str", text="empty, or a custom Ray resource some nodes offer"),
    "overlap": _BOOL,
    "learning_rate": _num(0, 1, above=True),
    "anneal_lr": _BOOL,
    "gamma": _num(0, 1),
    "gae_lambda": _num(0, 1),
    "reward_scale": _num(0, above=True),
    "minibatch_size": _int(1, 2**20),
    "update_epochs": _int(1, 1000),
    "clip_coef": _num(0, 10, above=True),
    "clip_vloss": _BOOL,
    "ent_coef": _num(0, 1000),
    "vf_coef": _num(0, 1000),
    "max_grad_norm": _num(0, 10**6, above=True),
    "norm_adv": _BOOL,
    "target_kl": _num(0, 1000),
    "kl_anchor": Valid(
        "str",
        text="empty, init (the checkpoint init names), a shipped policy (ppo, ppo-finetuned) or a checkpoint file",
    ),
    "kl_coef": _num(0, 10**6),
    "hidden": _int(*SIZE_LIMITS["hidden"]),
    "layers": _int(*SIZE_LIMITS["layers"]),
    "card_embed": _int(*SIZE_LIMITS["card_embed"]),
    "central_critic": _BOOL,
    "bc_iterations": _int(0, 10**9),
    "bc_teacher": Valid("str", text="an agent spec (a registered name or a checkpoint path, with parameters)"),
    "bc_epochs": _int(1, 1000),
    "bc_minibatch_size": _int(1, 2**20),
    "bc_learning_rate": _num(0, 1),
    "opp_self": _num(0, 10**6),
    "opp_pool": _num(0, 10**6),
    "opp_baselines": _num(0, 10**6),
    "baselines": Valid("str", text=_AGENTS + ", or empty"),
    "opp_learners": _int(0, 2),
    "snapshot_every": _int(0, 10**9),
    "pool_size": _int(0, 1024),
    "eval_every": _int(0, 10**9),
    "eval_games": _int(0, 10**6),
    "eval_opponents": Valid("str", text=_AGENTS + "; empty only without evaluations"),
    "final_eval_games": _int(0, 10**6),
    "eval_seed": _SEED,
    "final_eval_seed": _SEED,
    "checkpoint_minutes": _num(0, 10**6),
    "progress": _BOOL,
}


@dataclass
class Args:
    """A training run's settings: every field is a config key and a ``--field`` flag."""

    # --- run ---
    exp_name: str = "barbu_ppo"
    """Name of the run; its folder is ``run_dir/exp_name``.
    Valid: a folder name (not empty, no slashes, not . or ..)."""
    run_dir: str = "runs"
    """Where run folders go. Valid: a folder path, not empty."""
    seed: int = 1
    """Seed of everything (deals, sampling, initial weights). Valid: an integer from 0 to 4,294,967,295."""
    rules: str = "standard"
    """Rules preset (or YAML path) the agent trains under. Valid: a rules preset or a rules YAML file."""
    total_decisions: int = 5_000_000
    """Stop after this many environment decisions (all seats, opponents included).
    Valid: an integer from 1 to 1,000,000,000,000,000."""
    time_budget_minutes: float = 0.0
    """Also stop after this many minutes of training (0: no limit; the learning rate
    anneals over whichever runs out first; a resumed run counts its earlier sessions);
    the final evaluation comes after. Valid: a number from 0 to 1,000,000."""
    resume: str = ""
    """Checkpoint to resume from (weights, optimizer, counters, snapshot pool); ``auto``:
    the run's own ``run_dir/exp_name/checkpoints/latest.pt`` (a chain of ``stages``: the
    first unfinished stage's). Valid: empty, auto (the run's own latest.pt), or a checkpoint file."""
    init: str = ""
    """Checkpoint (or registered pretrained name, e.g. ``ppo``) whose weights start a new
    run: a fresh optimizer, counters and pool, its network shape the config's. Fine-tuning
    from a shipped policy; ``resume`` carries on a run instead (and wins if both are set).
    Valid: empty, a shipped policy (ppo, ppo-finetuned) or a checkpoint file."""
    stages: list = dataclasses.field(default_factory=list)
    """A chain of runs, in order, each a mapping of the fields it changes from the top
    level (config files only: no flag). Stage k runs in ``run_dir/<exp_name>-<k>`` unless
    it names its ``exp_name``; each stage after the first starts from the previous one's
    ``latest.pt`` (``init_from: best``: its ``best.pt``, which needs its ``eval_every``)
    unless it names its own ``init``; the top level's ``init`` starts the first. Flags
    win over the stages' own values, but for ``exp_name``, ``init`` (the first stage's)
    and ``resume``: ``--resume auto`` skips the stages that finished (a ``summary.json``
    in their folder) and resumes the first that did not from its ``latest.pt``.
    Valid: a list of mappings of training fields (and init_from), or empty."""
    expert: dict = dataclasses.field(default_factory=dict)
    """Make this run's network by expert iteration (``barbu_training.expert``) instead of PPO:
    the ``ExpertArgs`` fields to set (``worlds``, ``games``, ``temperature``, ...; config
    files only). ``init`` is the student; the searcher is ``pimc-ppo`` with the student as
    its rollout policy and prior unless the mapping names one; ``seed``, ``num_workers``,
    ``rules`` and ``torch_threads`` are the run's; the result is ``expert.pt`` in the run
    folder, which the next stage of a chain starts from. A stage's own field, not the top
    level's of a chain. Valid: empty, or a mapping of expert-iteration fields
    (barbu_training.expert.ExpertArgs: worlds, games, ...)."""

    # --- rollouts ---
    num_games: int = 512
    """Games the batched engine (``barbu_env.game.vector.VectorBarbu``) steps together in the
    learner process; each rollout plays them to the end of their episode (``episode``),
    about 1,570 decisions per whole game. Valid: an integer from 1 to 16,384."""
    episode: str = "game"
    """What a rollout's game is: ``game`` (all 28 hands), ``round`` (the first seven hands)
    or ``hand`` (the first hand only), the start of a whole game exactly
    (docs/rules.md#episodes); each rollout plays ``num_games`` of them. Evaluations always
    play whole games. Valid: one of game, round, hand."""
    num_workers: int = 2
    """Worker processes of the duplicate evaluations (one per core). Valid: an integer from 1 to 1024."""
    torch_threads: int = 2
    """Threads of the learner process (the rollouts' inference, the update). Valid: an integer from 1 to 1024."""
    device: str = "auto"
    """Where the network computes, in the rollouts' inference and the update: ``auto`` (a
    CUDA GPU when there is one, else Apple's MPS, else the CPU), ``cpu``, ``cuda``,
    ``cuda:N`` or ``mps``; a device this machine lacks is an error
    (``barbu_models.device.resolve_device``). Checkpoints are saved on the CPU, so they load
    anywhere, and a resumed run carries on on this device; the duplicate evaluations play
    the checkpoints on the CPU, in ``num_workers`` processes.
    Valid: auto, cpu, cuda, cuda:N or mps, one this machine has."""
    precision: str = "auto"
    """Matrix products of the network in the rollouts and the update: ``float32``,
    ``bfloat16`` (mixed precision: bfloat16 products accumulated in float32, float32
    weights and losses), or ``auto``: bfloat16 where the device multiplies it natively
    (a CPU with AVX-512 BF16 or AMX, a CUDA GPU that supports it), else float32
    (``barbu_training.precision``). Valid: one of auto, float32, bfloat16."""
    skip_forced: bool = True
    """A decision with a single legal action is played without asking anyone and is not a
    transition: the seat's rewards keep flowing to its previous decision (about 23% of
    decisions are forced: last cards of a suit, doubling turns with no choice). Valid: true or false."""

    # --- rollout workers (barbu_training.workers) ---
    workers: int = 0
    """Rollout workers: Ray actors that play the rollouts, each its share of the
    ``num_games`` games with a CPU copy of the policy, while the learner process updates
    (``barbu_training.workers``); 0: the rollouts play in the learner process. One worker plays
    exactly the in-process rollouts. Valid: an integer from 0 to 1024."""
    ray_address: str = ""
    """The Ray cluster the workers run on: empty (a local Ray started for the run, or the
    one this process started already), ``auto`` (the cluster ``ray start`` runs on this
    machine) or a cluster's address. Valid: empty (a local Ray), auto (the running cluster) or a cluster's address."""
    worker_resource: str = ""
    """A custom Ray resource each worker takes one unit of (``ray start --resources
    '{"rollout": 8}'`` on the nodes meant for rollouts); empty: any node with a free CPU.
    Valid: empty, or a custom Ray resource some nodes offer."""
    overlap: bool = False
    """With workers: the workers play iteration k+1's rollout, with the policy before
    update k, while the learner updates on rollout k (one iteration of policy lag, which
    PPO's ratio and clipping take; the first iteration waits). Valid: true or false."""

    # --- PPO ---
    learning_rate: float = 3e-4
    """Adam learning rate. Valid: a number above 0, at most 1."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over the run. Valid: true or false."""
    gamma: float = 0.995
    """Discount per decision of the same seat. Valid: a number from 0 to 1."""
    gae_lambda: float = 0.95
    """GAE lambda. Valid: a number from 0 to 1."""
    reward_scale: float = 0.01
    """Factor on the settled hand scores (points) to make rewards. Valid: a number above 0 (finite)."""
    minibatch_size: int = 4096
    """Transitions per gradient step. Valid: an integer from 1 to 1,048,576."""
    update_epochs: int = 3
    """Passes over each rollout. Valid: an integer from 1 to 1000."""
    clip_coef: float = 0.2
    """PPO ratio clip. Valid: a number above 0, at most 10."""
    clip_vloss: bool = False
    """Clip the value loss like the policy ratio. Valid: true or false."""
    ent_coef: float = 0.01
    """Weight of the (masked) entropy bonus. Valid: a number from 0 to 1000."""
    vf_coef: float = 0.5
    """Weight of the value loss. Valid: a number from 0 to 1000."""
    max_grad_norm: float = 0.5
    """Gradient norm clip. Valid: a number above 0, at most 1,000,000."""
    norm_adv: bool = True
    """Normalize advantages per minibatch. Valid: true or false."""
    target_kl: float = 0.0
    """Stop an update's epochs early past this approximate KL (0: never). Valid: a number from 0 to 1000."""
    kl_anchor: str = ""
    """A policy the PPO updates are pulled toward (a checkpoint or a shipped policy, e.g.
    ``ppo-finetuned``; empty: none): its network, frozen, on the run's device, gives the
    masked action distribution of each minibatch's observations, and the loss adds
    ``kl_coef`` times the mean KL(anchor || policy) over the legal actions (logged as
    ``losses/kl_anchor``; not during the warm start). ``init``: the checkpoint ``init``
    names (in a chain, the previous stage's). Its network shape may differ from the run's.
    Valid: empty, init (the checkpoint init names), a shipped policy (ppo, ppo-finetuned) or
    a checkpoint file."""
    kl_coef: float = 0.0
    """Weight of the KL term toward ``kl_anchor`` (0: no term, the update exactly as
    without an anchor; above 0 needs an anchor). Valid: a number from 0 to 1,000,000."""

    # --- model ---
    hidden: int = 256
    """Trunk width. Valid: an integer from 1 to 8192."""
    layers: int = 2
    """Trunk depth. Valid: an integer from 1 to 64."""
    card_embed: int = 32
    """Features per card row. Valid: an integer from 1 to 1024."""
    central_critic: bool = False
    """Train with a privileged critic: the value network also sees the other three
    hands (the policy never does; checkpoints act from the observation alone). Valid: true or false."""

    # --- warm start ---
    bc_iterations: int = 0
    """Iterations of imitation before PPO: whole games of ``bc_teacher`` in every seat,
    the policy trained to pick its actions and the value head to predict the returns
    (0: start from scratch). Valid: an integer from 0 to 1,000,000,000."""
    bc_teacher: str = "heuristic"
    """The agent imitated during the warm start (a registered name).
    Valid: an agent spec (a registered name or a checkpoint path, with parameters)."""
    bc_epochs: int = 2
    """Passes over each warm-start rollout. Valid: an integer from 1 to 1000."""
    bc_minibatch_size: int = 512
    """Examples per imitation gradient step (supervised learning wants smaller batches
    and more steps than PPO: 512 imitates the heuristic far better than 4,096).
    Valid: an integer from 1 to 1,048,576."""
    bc_learning_rate: float = 1e-3
    """Adam learning rate during the warm start, constant (0: PPO's schedule). Valid: a number from 0 to 1."""

    # --- opponents ---
    opp_self: float = 0.6
    """Weight of pure self-play games. Valid: a number from 0 to 1,000,000."""
    opp_pool: float = 0.2
    """Weight of games against a past snapshot. Valid: a number from 0 to 1,000,000."""
    opp_baselines: float = 0.2
    """Weight of games against baseline agents. Valid: a number from 0 to 1,000,000."""
    baselines: str = "heuristic,random"
    """Baseline agents for opponent games (registered names).
    Valid: agent specs separated by commas (registered names or checkpoint paths, with
    parameters), or empty."""
    opp_learners: int = 0
    """Learning seats in each game against a pool snapshot or baselines: 1 (the policy
    alone among three opponents, as ``barbu exploit``'s best response trains), 2, or 0:
    one or two at random, drawn per game. Valid: an integer from 0 to 2."""
    snapshot_every: int = 5
    """Iterations between snapshots added to the pool. Valid: an integer from 0 to 1,000,000,000."""
    pool_size: int = 8
    """Snapshots kept (the oldest is dropped). Valid: an integer from 0 to 1024."""

    # --- evaluation and checkpoints ---
    eval_every: int = 10
    """Iterations between duplicate evaluations (0: only at the end). Valid: an integer from 0 to 1,000,000,000."""
    eval_games: int = 200
    """Games per periodic evaluation, against each eval opponent. Valid: an integer from 0 to 1,000,000."""
    eval_opponents: str = "heuristic,random"
    """Each periodic evaluation plays the policy against three of each of these.
    Valid: agent specs separated by commas (registered names or checkpoint paths, with
    parameters); empty only without evaluations."""
    final_eval_games: int = 1000
    """Games of the final evaluation against each eval opponent (0: none; the summary
    then has no final figures). Valid: an integer from 0 to 1,000,000."""
    eval_seed: int = 12345
    """Seed of the periodic evaluations' deal sets (the same every time, for comparable
    points). Valid: an integer from 0 to 4,294,967,295."""
    final_eval_seed: int = 54321
    """Seed of the final evaluation's deal sets (held out from the periodic ones, which
    chose the best checkpoint). Valid: an integer from 0 to 4,294,967,295."""
    checkpoint_minutes: float = 5.0
    """Minutes between checkpoints (latest.pt, written after the iteration that passes
    the mark; 0: after every iteration; every periodic evaluation also writes one;
    best.pt follows the evaluations). A killed run loses at most this much work plus one
    iteration; Ctrl-C loses only the iteration under way. Valid: a number from 0 to 1,000,000."""
    progress: bool = True
    """Show a progress bar. Valid: true or false."""

    @property
    def local_workers(self) -> int:
        """Rollout workers on a Ray this run starts on this machine (none with ``ray_address``:
        a cluster's workers use their nodes' cores and memory)."""
        return 0 if self.ray_address else self.workers

    def __post_init__(self) -> None:
        """Every field checked against ``VALID`` (ints given to float fields become
        floats), then the fields that only make sense together; a ConfigError otherwise.
        What needs the machine or the files (rules, device, agents, checkpoints, memory)
        is ``prepare``'s."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, VALID[f.name].check(f.name, getattr(self, f.name)))
        if self.exp_name in ("", ".", "..") or any(c in self.exp_name for c in "/\\\0"):
            raise ConfigError(f"exp_name must be {VALID['exp_name'].describe()}, not {_show(self.exp_name)}")
        if not self.run_dir or "\0" in self.run_dir:
            raise ConfigError(f"run_dir must be {VALID['run_dir'].describe()}, not {_show(self.run_dir)}")
        if self.eval_every and self.eval_games < 1:
            raise ConfigError(f"eval_every {self.eval_every} needs eval_games of at least 1, not {self.eval_games}")
        if not split_agent_specs(self.eval_opponents) and (self.eval_every or self.final_eval_games):
            raise ConfigError(
                "eval_opponents names no agent, but eval_every or final_eval_games asks for evaluations: "
                "name one (random, heuristic, ...) or set both to 0"
            )
        if self.opp_self + self.opp_pool + (self.opp_baselines if split_agent_specs(self.baselines) else 0.0) <= 0:
            raise ConfigError("opp_self, opp_pool and opp_baselines (with baselines named) are all 0: no game to play")
        if self.kl_coef > 0 and not self.kl_anchor:
            raise ConfigError(
                f"kl_coef {self.kl_coef:g} needs a kl_anchor to pull toward (a checkpoint or shipped policy)"
            )
        if not self.workers:
            alone = [n for n in ("ray_address", "worker_resource", "overlap") if getattr(self, n)]
            if alone:
                raise ConfigError(f"{', '.join(alone)} set with workers 0: they are the rollout workers' settings")
        elif self.num_games < self.workers:
            raise ConfigError(f"workers {self.workers} need num_games of at least {self.workers}, not {self.num_games}")
        if self.stages and self.expert:
            raise ConfigError(
                "expert is a stage's field: put it in the stage that makes its network by expert iteration"
            )
        if not self.stages and not self.init and (self.expert or self.kl_anchor == "init"):
            field = "expert" if self.expert else "kl_anchor init"
            raise ConfigError(f"{field} needs an init: the network to {'teach' if self.expert else 'pull toward'}")
        if self.stages:
            stage_args(self)  # every stage checked now, not when the chain reaches it


#: The largest config file read (the shipped chains are under 4 kB).
CONFIG_FILE_LIMIT = 1_000_000


def load_args(config: str | None = None, overrides: dict[str, Any] | None = None) -> Args:
    """Args from a YAML file and overrides (the command line's flags), every field checked
    (``Args.__post_init__``); anything wrong is a ConfigError of one line naming the field:
    an unknown field, a value of the wrong type or out of its range, a file that is not a
    YAML mapping. In a chain of ``stages`` the overrides win over every stage's own values
    too, but for the chain's fields (``CHAIN_FIELDS``): ``exp_name`` and ``resume`` are the
    top level's only, ``init`` the first stage's. The file is read as a stranger's
    (``barbu_env.util.files.read_text`` and ``safe_yaml``: at most ``CONFIG_FILE_LIMIT`` bytes of a
    regular file, no alias bomb)."""
    values: dict[Any, Any] = {}
    where = f"{config}: " if config else ""
    if config:
        try:  # a stranger's file: a regular file of bounded size, aliases that do not expand past a limit
            data = safe_yaml(read_text(config, CONFIG_FILE_LIMIT, "config"), f"config {config}") or {}
        except FileNotFoundError as e:
            raise ConfigError(str(e)) from None
        except InputError as e:  # not a file, too large, not UTF-8, not YAML, an alias bomb
            raise ConfigError(str(e)) from None
        except (ValueError, RecursionError) as e:  # an integer of too many digits, nesting too deep
            raise ConfigError(f"config {config}: not a config YAML can read ({quote(_one_line(e), 80)})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{config}: a training config is a mapping of fields, not {_show(data)}")
        values.update(data)
    flags = dict(overrides or {})
    values.update(flags)
    known = {f.name for f in dataclasses.fields(Args)}
    unknown = sorted((k for k in values if k not in known), key=repr)
    if unknown:
        names = ", ".join(_show(k) for k in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        raise ConfigError(f"{where}unknown training field(s) {names}; known fields: {sorted(known)}")
    if flags and isinstance(values.get("stages"), list):  # the flags are the last word in every stage
        every = {k: v for k, v in flags.items() if k not in CHAIN_FIELDS}
        values["stages"] = [
            stage | every | ({"init": flags["init"]} if k == 0 and "init" in flags else {})
            if isinstance(stage, dict)
            else stage  # not a mapping: Args says so
            for k, stage in enumerate(values["stages"])
        ]
    try:
        return Args(**{name: _yaml_number(name, value) for name, value in values.items()})
    except ConfigError as e:
        raise ConfigError(f"{where}{e}") from None


#: A number in exponent form without a dot (``3e-4``, ``1.0e3``): YAML 1.2 reads it as a
#: float, PyYAML (YAML 1.1) as a string; a float field takes it. No other text is a number.
_EXPONENT_FLOAT = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+")


def _yaml_number(name: str, value: Any) -> Any:
    """``value``, or the float a float field's string in exponent form writes (``3e-4``)."""
    if Args.__dataclass_fields__[name].type == "float" and isinstance(value, str) and _EXPONENT_FLOAT.fullmatch(value):
        return float(value)
    return value


# ---------------------------------------------------------------------- a chain of runs

#: Fields of a chain of ``stages`` that are not every stage's: the base of the stages'
#: names, the first stage's start, the chain's resume (flags for them set the chain's).
CHAIN_FIELDS = ("exp_name", "init", "resume")
#: What a stage may name besides the fields: which checkpoint of the previous stage it
#: starts from (``latest.pt``, the default, or ``best.pt``, the best periodic evaluation's).
INIT_FROM = ("latest", "best")


def stage_args(args: Args) -> list[Args]:
    """The ``Args`` of each of ``args.stages``, in order: the top level's fields (but
    ``stages`` and ``resume``, the chain's, and ``expert``, a stage's own), then the
    stage's own; stage k named ``<exp_name>-<k>`` unless it names itself; each stage after
    the first starting from the previous stage's ``checkpoints/latest.pt`` (``init_from:
    best``: ``best.pt``; after a stage of expert iteration, its ``expert.pt``:
    ``stage_checkpoint``) unless it names its own ``init``. A ConfigError naming the stage
    and the field otherwise: a field Args does not have, a bad value, ``resume`` or
    ``stages`` in a stage, ``init_from`` on the first stage, with an ``init`` or after a
    stage of expert iteration, a ``best.pt`` the previous stage will not write (no
    periodic evaluations), a network shape other than the previous stage's (but for a
    privileged critic added), two stages in one folder."""
    known = {f.name for f in dataclasses.fields(Args)}
    base = {
        f.name: getattr(args, f.name) for f in dataclasses.fields(Args) if f.name not in ("stages", "resume", "expert")
    }
    out: list[Args] = []
    folders: dict[Path, int] = {}
    n = len(args.stages)
    for k, stage in enumerate(args.stages, 1):
        where = f"stages: stage {k} of {n}"
        unknown = sorted((key for key in stage if key not in known and key != "init_from"), key=repr)
        if unknown:
            names = ", ".join(_show(key) for key in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
            raise ConfigError(f"{where}: unknown training field(s) {names}")
        for field, why in (
            ("stages", "a stage has no stages of its own"),
            ("resume", "--resume auto resumes the chain"),
        ):
            if field in stage:
                raise ConfigError(f"{where}: {field} is not a stage's field ({why})")
        init_from = stage.get("init_from", "latest")
        if init_from not in INIT_FROM:
            raise ConfigError(f"{where}: init_from must be one of {', '.join(INIT_FROM)}, not {_show(init_from)}")
        if "init_from" in stage and (k == 1 or "init" in stage):
            why = "the first stage has no previous stage (init starts it)" if k == 1 else "init names its start"
            raise ConfigError(f"{where}: init_from and init: {why}")
        values = base | {key: _yaml_number(key, v) for key, v in stage.items() if key != "init_from"}
        if "exp_name" not in stage:
            values["exp_name"] = f"{args.exp_name}-{k}"
        chained = k > 1 and "init" not in stage
        if chained:
            prev = out[-1]
            if prev.expert and "init_from" in stage:
                raise ConfigError(
                    f"{where}: init_from: stage {k - 1} makes one network by expert iteration (expert.pt)"
                )
            values["init"] = stage_checkpoint(prev, init_from)
        try:
            made = Args(**values)
        except ConfigError as e:
            raise ConfigError(f"{where} ({_show(values['exp_name'])}): {e}") from None
        where = f"{where} ({made.exp_name})"
        if chained:
            if init_from == "best" and not prev.eval_every:
                raise ConfigError(
                    f"{where}: init_from best needs stage {k - 1}'s best.pt, which only its periodic "
                    "evaluations write, and its eval_every is 0"
                )
            mine, theirs = model_config(made), model_config(prev)
            if mine != theirs and dataclasses.replace(theirs, state_dim=mine.state_dim) != mine:
                raise ConfigError(
                    f"{where}: hidden/layers/card_embed build another network than stage {k - 1}'s, "
                    f"which it starts from ({mine.hidden}x{mine.layers}, {mine.card_embed} against "
                    f"{theirs.hidden}x{theirs.layers}, {theirs.card_embed})"
                )
            if mine.state_dim < theirs.state_dim:
                raise ConfigError(f"{where}: central_critic false cannot start from stage {k - 1}'s privileged critic")
        folder = Path(made.run_dir) / made.exp_name
        if folder in folders:
            raise ConfigError(f"{where}: exp_name runs in stage {folders[folder]}'s folder {folder}")
        folders[folder] = k
        out.append(made)
    return out


def stage_checkpoint(args: Args, which: str = "latest") -> str:
    """The checkpoint the stage after a run of ``args`` starts from: its ``expert.pt`` (a run
    of expert iteration, ``expert``), else its ``checkpoints/<which>.pt`` (``INIT_FROM``)."""
    folder = Path(args.run_dir) / args.exp_name
    return str(folder / "expert.pt" if args.expert else folder / "checkpoints" / f"{which}.pt")


def resume_path(args: Args) -> str:
    """The checkpoint ``resume`` names: ``auto`` is the run's own ``latest.pt``."""
    if args.resume == "auto":
        return str(Path(args.run_dir) / args.exp_name / "checkpoints" / "latest.pt")
    return args.resume


@dataclass
class Prepared:
    """What ``prepare`` found: the rules, the device and the products' dtype, the
    checkpoint that ``resume`` or ``init`` names, loaded (None without), and the network of
    ``kl_anchor``, on the CPU (None without)."""

    rules: Any
    device: Any
    dtype: Any
    start: tuple[Any, dict[str, Any]] | None = None
    anchor: Any = None


def prepare(args: Args, memory: int | None = None, written: bool = True) -> Prepared:
    """Every check of ``args`` that needs more than the field values, before a run
    touches anything on disk: the rules load, the device is on this machine, the precision
    resolves on it, every agent of ``bc_teacher``, ``baselines`` and ``eval_opponents`` can
    be made, the checkpoints of ``resume``/``init`` and ``kl_anchor`` load (their networks
    within bounds, their weights of the right shapes and finite), everything a resumed run
    restores is whole (``barbu_training.checkpoint_check``), the first rollouts have games to
    play (a fresh run's pool is empty), and the run's memory (``memory_needed``) fits in
    ``memory`` bytes (default: this machine's, and a CUDA device's own for the networks);
    for a run of expert iteration (``expert``), that its searcher can be made and every
    label-collecting worker has a game to fit on. Not ``written``: ``init`` is a
    checkpoint still to come (a chain's stage that starts from the previous one's), so
    neither it, nor the anchor when that is ``init``, nor a searcher is loaded. A
    ConfigError naming the field otherwise. Overlapped local workers and update threads
    that ask for more cores than there are: an ``OversubscribedWarning``."""
    import torch

    from barbu_env.agents import make_agent
    from barbu_env.agents.pretrained import SHIPPED, checkpoint_path
    from barbu_env.game.rules import load_rules
    from barbu_env.util.extras import MissingExtraError
    from barbu_models.device import resolve_device
    from barbu_models.policy import load_checkpoint
    from barbu_training.checkpoint_check import check_resumable
    from barbu_training.precision import resolve_precision

    try:
        rules = load_rules(args.rules)
    except (ValueError, OSError) as e:
        raise ConfigError(f"rules: {_one_line(e)}") from None
    try:
        device = resolve_device(args.device)
    except ValueError as e:
        raise ConfigError(f"device: {_one_line(e)}") from None
    dtype = resolve_precision(args.precision, device)
    if args.workers:
        from barbu_env.util.extras import require

        try:
            require("ray", "ray", f"workers {args.workers}")
        except MissingExtraError as e:
            raise ConfigError(str(e)) from None
    for field, specs in (
        ("bc_teacher", [args.bc_teacher]),
        ("baselines", split_agent_specs(args.baselines)),
        ("eval_opponents", split_agent_specs(args.eval_opponents)),
    ):
        for spec in dict.fromkeys(specs):
            try:
                make_agent(spec, rules=rules)
            except (ValueError, TypeError, OSError, MissingExtraError) as e:
                raise ConfigError(f"{field}: {_show(spec)} is not an agent barbu can make ({_one_line(e)})") from None

    def load(field: str, spec: str) -> tuple[Any, dict[str, Any]]:
        path = checkpoint_path(spec)
        if not path.is_file():
            kind = "a checkpoint file" + (f" or a shipped policy ({', '.join(SHIPPED)})" if field != "resume" else "")
            raise ConfigError(f"{field}: {_show(spec)} is not {kind}")
        try:
            loaded = load_checkpoint(path)  # its network's config and weights checked before it is built
        except (ValueError, OSError) as e:
            raise ConfigError(f"{field}: {_one_line(e)}") from None
        if field == "resume":  # everything the trainer restores, checked before anything starts
            try:
                check_resumable(loaded[1], model_config(args))
            except ValueError as e:
                raise ConfigError(f"resume: {path}: {e}") from None
        return loaded

    start = None
    init = args.init if written else ""  # a checkpoint still to come is not loaded
    field, spec = ("resume", args.resume) if args.resume else ("init", init)
    if spec:
        start = load(field, resume_path(args) if field == "resume" else spec)
    anchor_spec = init if args.kl_anchor == "init" else args.kl_anchor
    anchor = load("kl_anchor", anchor_spec)[0] if anchor_spec else None
    if args.expert:
        from barbu_training.expert import stage_expert_args

        expert = stage_expert_args(args)
        if not expert.labels:
            try:
                expert.check_games()
            except ConfigError as e:
                raise ConfigError(f"expert: {e}") from None
        if written:
            try:
                make_agent(expert.searcher, rules=rules)
            except (ValueError, TypeError, OSError, MissingExtraError) as e:
                raise ConfigError(
                    f"expert: searcher {_show(expert.searcher)} is not an agent barbu can make ({_one_line(e)})"
                ) from None
    pool = start[1].get("pool", {}) if start and args.resume else {}
    if not pool and args.opp_self + (args.opp_baselines if split_agent_specs(args.baselines) else 0.0) <= 0:
        raise ConfigError(
            "opp_self and opp_baselines (with baselines named) are both 0, and the pool is empty until "
            "the first snapshot: the first rollouts have no game to play, so one of them must be above 0"
        )
    need, on_device = memory_needed(args)
    have = memory if memory is not None else _physical_memory()
    if have and need > have:
        here = f" with {args.local_workers} rollout workers on this machine" if args.local_workers else ""
        raise ConfigError(
            f"num_games {args.num_games}, hidden {args.hidden}, layers {args.layers}, minibatch_size "
            f"{args.minibatch_size} and pool_size {args.pool_size}{here} need about {need / 2**30:.1f} GiB "
            f"(rollout buffers, networks, a minibatch), more than this machine's {have / 2**30:.1f} GiB"
        )
    if memory is None and device.type == "cuda":
        room = torch.cuda.get_device_properties(device).total_memory
        if on_device > room:
            raise ConfigError(
                f"hidden {args.hidden}, layers {args.layers}, card_embed {args.card_embed} and minibatch_size "
                f"{args.minibatch_size} need about {on_device / 2**30:.1f} GiB on {device}, which has "
                f"{room / 2**30:.1f} GiB"
            )
    if args.overlap and args.local_workers and device.type == "cpu":
        warn_oversubscribed(args)
    return Prepared(rules, device, dtype, start, anchor)


class OversubscribedWarning(UserWarning):
    """Overlapped rollout workers and the update ask for more cores than this machine has."""


def learner_threads(cores: int, workers: int) -> int:
    """Update threads that leave one core to each rollout worker on this machine (at least one).

    >>> learner_threads(2, 1), learner_threads(2, 2), learner_threads(16, 4)
    (1, 1, 12)
    """
    return max(1, cores - workers)


def warn_oversubscribed(args: Args, cores: int | None = None) -> None:
    """With ``overlap``, the local workers (one core each) play while the update runs on
    ``torch_threads`` CPU threads: more of them than ``cores`` (default: the cores this
    process may use) slows both, measured in docs/training.md; a warning saying what fits."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.workers + args.torch_threads > cores:
        fits, plural = learner_threads(cores, args.workers), "s" * (args.workers != 1)
        warnings.warn(
            f"overlap with {args.workers} rollout worker{plural} and torch_threads {args.torch_threads} asks for "
            f"{args.workers + args.torch_threads} cores on this machine's {cores}: the update and the workers "
            f"slow each other down (docs/training.md); torch_threads {fits} leaves each worker its core",
            OversubscribedWarning,
            stacklevel=3,
        )


def memory_needed(args: Args) -> tuple[int, int]:
    """Bytes a run needs, about: ``(in all, on the network's device)``. In all: the
    rollout buffers (``barbu_training.rollout.buffer_bytes``), the network with its gradients,
    Adam's two moments and the copies a run keeps (the last whole iteration's, the pool's
    snapshots and their networks), and a minibatch's activations; on the device, the
    network, its gradients and moments, and the activations. Rollout workers on a Ray this
    run starts on this machine (``workers`` without ``ray_address``) add their own buffers
    (the rollout's again, split between them) and each its copies of the policy and the
    pool; workers on a cluster use their nodes' memory, not counted."""
    import torch

    from barbu_models.policy import BarbuActorCritic
    from barbu_training.rollout import buffer_bytes

    with torch.device("meta"):  # shapes only: nothing allocated
        model = BarbuActorCritic(model_config(args))
    weights = 4 * sum(p.numel() for p in model.parameters())
    widest = model.trunk[0].in_features + args.hidden * args.layers
    batch = max(args.minibatch_size, args.bc_minibatch_size)
    activations = 16 * batch * widest * (2 if args.central_critic else 1)  # forward, masks, gradients
    on_device = 4 * weights + activations
    need = buffer_bytes(args) + on_device + (3 + 2 * args.pool_size) * weights
    if args.local_workers:
        need += buffer_bytes(args) + args.local_workers * (1 + 2 * args.pool_size) * weights
    return need, on_device


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: no check
        return None


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


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
    """One ``--field`` per field of the dataclass ``cls`` of type int, float, str or bool
    (fields of other types are left to config files), its docstring as help; without
    ``defaults`` an absent flag is left out of the namespace
    (so that a config file can fill it)."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        if f.type not in ("int", "float", "str", "bool"):
            continue  # a list (``stages``): config files only
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
