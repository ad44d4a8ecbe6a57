"""The trainer's arguments as a schema: ``Args`` (and ``ExpertArgs``), YAML configs, flags.

Each field is declared once: its default and valid values (``_field``: numeric bounds and
choices as pydantic ``Field`` constraints, ``ge``/``gt``/``le``/``pattern``), its description
the docstring under it. A strict pydantic model made from the dataclass (``schema``) checks
the values: a bool is no int, text is no number (``load_args`` reads the exponent form PyYAML
leaves as text, ``3e-4``), an int given to a float field becomes a float, floats are finite.
pydantic: a dependency already (the web table's requests), and a field's constraint in one
declaration; the dataclass stays a plain one (``dataclasses.replace``, ``asdict``, a field's
``type``) whose constructor raises ``ConfigError``. Text in words (a folder name, a rules
preset, an agent, a device, a checkpoint) is checked by the cross-field rules or by
``barbu_training.preflight``, which needs the machine or the files. From the declarations:
``VALID`` (``Valid.describe``: the values in words), each flag's ``--help``
(``add_field_flags``) and the table in docs/training.md (``markdown_table``, written there by
``docs/docstring_to_md.py``). A value out of range is a ``ConfigError``: a ValueError of one
line naming the field, its valid values and the value given.

``barbu train --config configs/train/quick.yaml --seed 3`` reads a config of ``Args`` fields,
then applies one ``--field`` flag per field (``load_args``, ``build_parser``); a field ``Args``
does not have is an error naming it. ``add_field_flags`` gives any dataclass such flags (the
SB3, RLlib and TorchRL scripts use it). ``Args`` checks the form of a chain of runs
(``stages``); each stage's own ``Args`` is made once, by ``barbu_training.stages``.
Checkpoints keep their config as a plain dict and resuming reads only its network shape.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import itertools
import json
import re
import reprlib
import textwrap
from dataclasses import dataclass
from typing import Any

from barbu_env.agents.pretrained import SHIPPED
from barbu_env.agents.registry import split_agent_specs
from barbu_env.game.observation import NUM_CARD_ROWS, OBS_DIM, OBS_LAYOUT, PRIVILEGED_DIM
from barbu_env.util.argtypes import OneLineParser
from barbu_env.util.extras import needs
from barbu_env.util.files import InputError, quote, read_text, safe_yaml
from barbu_models.policy import SIZE_LIMITS, PolicyConfig
from barbu_training.precision import PRECISIONS

with needs("train", "barbu_training.config"):  # one line if the extra is missing
    from pydantic import ConfigDict, Field, ValidationError, create_model
    from pydantic.fields import FieldInfo


class ConfigError(ValueError):
    """A training config that cannot run: one line naming the field(s), what they may be
    and the value given (``barbu train`` prints it and exits 1, before anything on disk is
    touched)."""


# ---------------------------------------------------------------------- the schema


def _field(default: Any, valid: str = "", choices: tuple[str, ...] = (), **bounds: Any) -> Any:
    """A schema field: its default and its valid values: numeric ``bounds`` (pydantic's
    ``ge``, ``gt``, ``le``), ``choices`` (a ``pattern`` of pydantic's), or ``valid``, the values
    in words that the cross-field rules or the preflight check. Its description is the
    docstring under it (``field_docs``)."""
    if choices:
        bounds["pattern"] = "^(" + "|".join(map(re.escape, choices)) + ")$"
    constraint = Field(json_schema_extra={"valid": valid, "choices": list(choices)}, **bounds)
    made = {"default_factory": type(default)} if isinstance(default, list | dict) else {"default": default}
    return dataclasses.field(**made, metadata={"schema": constraint})


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}
#: Seeds: numpy's and torch's generators take any of these.
_SEED = {"ge": 0, "le": 2**32 - 1}
#: Processes and threads.
_CORES = {"ge": 1, "le": 1024}
_RULES = "a rules preset or a rules YAML file"
_FOLDER = "a folder path, not empty"
_FOLDER_NAME = "a folder name (1 to 200 printable characters, at most 255 bytes, no slashes, not . or ..)"
_AGENTS = "agent specs separated by commas (registered names or checkpoint paths, with parameters)"
_SHIPPED = f"a shipped policy ({', '.join(SHIPPED)}) or a checkpoint file"
_EXPERT = "empty, or a mapping of expert-iteration fields (barbu_training.expert.ExpertArgs: worlds, games, ...)"


def _size(name: str) -> dict[str, int]:
    """A network size's bounds: ``barbu_models.policy.SIZE_LIMITS``, which checkpoints are checked against too."""
    low, high = SIZE_LIMITS[name]
    return {"ge": low, "le": high}


@functools.cache
def schema(cls: type) -> type:
    """The pydantic model (strict, finite floats) of the schema dataclass ``cls``: each
    field's type and constraint."""
    fields = {f.name: (_TYPES[f.type], f.metadata["schema"]) for f in dataclasses.fields(cls)}
    return create_model(f"{cls.__name__}Schema", __config__=ConfigDict(strict=True, allow_inf_nan=False), **fields)


@dataclass(frozen=True)
class Valid:
    """The values a field takes, as its constraint says: ``kind``, the field's type; numbers
    from ``low`` to ``high`` (``low`` itself excluded if ``above``; no ``high``: any finite
    number), text one of ``choices`` or as ``text`` says."""

    kind: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    choices: tuple[str, ...] = ()
    text: str = ""

    @classmethod
    def of(cls, kind: str, constraint: FieldInfo) -> Valid:
        """The valid values a schema field's ``constraint`` declares."""
        bounds = {
            name: getattr(b, name) for b in constraint.metadata for name in ("ge", "gt", "le") if hasattr(b, name)
        }
        extra = constraint.json_schema_extra
        low = bounds.get("gt", bounds.get("ge"))
        return cls(kind, low, bounds.get("le"), "gt" in bounds, tuple(extra["choices"]), extra["valid"])

    def describe(self) -> str:
        """The valid values in words (``--help``, errors and docs/training.md say it)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind in ("str", "list", "dict"):
            return self.text or "one of " + ", ".join(self.choices)
        if self.kind == "int":
            return f"an integer from {_number(self.low)} to {_number(self.high)}"
        if self.above:
            return f"a number above {_number(self.low)}" + (
                f", at most {_number(self.high)}" if self.high is not None else " (finite)"
            )
        if self.high is None:
            return f"a finite number of at least {_number(self.low)}"
        return f"a number from {_number(self.low)} to {_number(self.high)}"


@functools.cache
def valid_values(cls: type) -> dict[str, Valid]:
    """Each field of the schema dataclass ``cls`` with its valid values."""
    return {f.name: Valid.of(f.type, f.metadata["schema"]) for f in dataclasses.fields(cls)}


def checked(cls: type, values: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``values`` (every field of the schema dataclass ``cls``) validated by its schema, as
    the fields' types (an int given to a float field a float); a ConfigError naming the
    first field that fails, its valid values and the value given (after ``where``) otherwise."""
    try:
        return dict(schema(cls).model_validate(values))
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        name = error["loc"][0]
        raise ConfigError(
            f"{where}{name} must be {valid_values(cls)[name].describe()}, not {show(error['input'])}"
        ) from None


def _number(x: float | None) -> str:
    if x is None:
        return ""
    x = int(x) if float(x).is_integer() else x
    return f"{x:,}" if isinstance(x, int) and abs(x) >= 10_000 else str(x)


def show(value: Any) -> str:
    """A value as an error message shows it: its repr, cut short, on one line."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = shown.maxlong = 40
    try:
        return shown.repr(value)
    except ValueError:  # an integer past Python's digits limit for str()
        return f"an integer of {value.bit_length()} bits"


# ---------------------------------------------------------------------- the fields


@dataclass
class Args:
    """A training run's settings: every field is a config key and a ``--field`` flag. Upper
    bounds keep a run inside what a machine can hold: the rollout buffers (``num_games``), the
    networks (``hidden``, ``layers``, ``card_embed``, ``pool_size``), a minibatch's activations
    (the preflight also compares the whole estimate with this machine's memory). Every float
    field's range is one the update survives: each value in it trains, or stops the run with
    ``TrainingDiverged`` and its last whole iteration kept; none makes it fail (the clip's
    bounds are converted to float32, so ``clip_coef`` is at most 10). How the bounds were
    chosen: docs/training.md."""

    exp_name: str = _field("barbu_ppo", valid=_FOLDER_NAME)
    """Name of the run; its folder is ``run_dir/exp_name``."""
    run_dir: str = _field("runs", valid=_FOLDER)
    """Where run folders go."""
    seed: int = _field(1, **_SEED)
    """Seed of everything (deals, sampling, initial weights)."""
    rules: str = _field("standard", valid=_RULES)
    """Rules preset (or YAML path) the agent trains under."""
    total_decisions: int = _field(5_000_000, ge=1, le=10**15)
    """Stop after this many environment decisions (all seats, opponents included)."""
    time_budget_minutes: float = _field(0.0, ge=0, le=10**6)
    """Also stop after this many minutes of training (0: no limit; the learning rate anneals over whichever runs out
    first; a resumed run counts its earlier sessions); the final evaluation comes after."""
    resume: str = _field("", valid="empty, auto (the run's own latest.pt), or a checkpoint file")
    """Checkpoint to resume from (weights, optimizer, counters, snapshot pool); ``auto``: the run's own
    ``run_dir/exp_name/checkpoints/latest.pt`` (a chain of ``stages``: the first unfinished stage's)."""
    init: str = _field("", valid="empty, " + _SHIPPED)
    """Checkpoint (or registered pretrained name, e.g. ``ppo``) whose weights start a new run: a fresh optimizer,
    counters and pool, its network shape the config's. Fine-tuning from a shipped policy; ``resume`` carries on a
    run instead (and wins if both are set)."""
    stages: list = _field([], valid="a list of mappings of training fields (and init_from), or empty")
    """A chain of runs, in order, each a mapping of the fields it changes from the top level (config files only: no
    flag). Stage k runs in ``run_dir/<exp_name>-<k>`` unless it names its ``exp_name``; each stage after the first
    starts from the previous one's ``latest.pt`` (``init_from: best``: its ``best.pt``, which needs its
    ``eval_every``) unless it names its own ``init``; the top level's ``init`` starts the first. Flags win over the
    stages' own values, but for ``exp_name``, ``init`` (the first stage's) and ``resume``: ``--resume auto`` skips
    the stages that finished (a ``summary.json`` in their folder) and resumes the first that did not from its
    ``latest.pt``."""
    expert: dict = _field({}, valid=_EXPERT)
    """Make this run's network by expert iteration (``barbu_training.expert``) instead of PPO: the ``ExpertArgs``
    fields to set (``worlds``, ``games``, ``temperature``, ...; config files only). ``init`` is the student; the
    searcher is ``pimc-ppo`` with the student as its rollout policy and prior unless the mapping names one;
    ``seed``, ``num_workers``, ``rules`` and ``torch_threads`` are the run's; the result is ``expert.pt`` in the run
    folder, which the next stage of a chain starts from. A stage's own field, not the top level's of a chain."""
    num_games: int = _field(512, ge=1, le=16384)
    """Games the batched engine (``barbu_env.game.vector.VectorBarbu``) steps together in the learner process; each
    rollout plays them to the end of their episode (``episode``), about 1,570 decisions per whole game."""
    episode: str = _field("game", choices=("game", "round", "hand"))
    """What a rollout's game is: ``game`` (all 28 hands), ``round`` (the first seven hands) or ``hand`` (the first hand
    only), the start of a whole game exactly (docs/rules.md#episodes); each rollout plays ``num_games`` of them.
    Evaluations always play whole games."""
    num_workers: int = _field(2, **_CORES)
    """Worker processes of the duplicate evaluations (one per core)."""
    torch_threads: int = _field(2, **_CORES)
    """Threads of the learner process (the rollouts' inference, the update)."""
    device: str = _field("auto", valid="auto, cpu, cuda, cuda:N or mps, one this machine has")
    """Where the network computes, in the rollouts' inference and the update: ``auto`` (a CUDA GPU when there is one,
    else Apple's MPS, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; a device this machine lacks is an
    error (``barbu_models.device.resolve_device``). Checkpoints are saved on the CPU, so they load anywhere, and a
    resumed run carries on on this device; the duplicate evaluations play the checkpoints on the CPU, in
    ``num_workers`` processes."""
    precision: str = _field("auto", choices=PRECISIONS)
    """Matrix products of the network in the rollouts and the update: ``float32``, ``bfloat16`` (mixed precision:
    bfloat16 products accumulated in float32, float32 weights and losses), or ``auto``: bfloat16 where the device
    multiplies it natively (a CPU with AVX-512 BF16 or AMX, a CUDA GPU that supports it), else float32
    (``barbu_training.precision``)."""
    skip_forced: bool = _field(True)
    """A decision with a single legal action is played without asking anyone and is not a transition: the seat's
    rewards keep flowing to its previous decision (about 23% of decisions are forced: last cards of a suit, doubling
    turns with no choice)."""
    workers: int = _field(0, ge=0, le=1024)
    """Rollout workers: Ray actors that play the rollouts, each its share of the ``num_games`` games with a CPU copy of
    the policy, while the learner process updates (``barbu_training.workers``); 0: the rollouts play in the learner
    process. One worker plays exactly the in-process rollouts."""
    ray_address: str = _field("", valid="empty (a local Ray), auto (the running cluster) or a cluster's address")
    """The Ray cluster the workers run on: empty (a local Ray started for the run, or the one this process started
    already), ``auto`` (the cluster ``ray start`` runs on this machine) or a cluster's address."""
    worker_resource: str = _field("", valid="empty, or a custom Ray resource some nodes offer")
    """A custom Ray resource each worker takes one unit of (``ray start --resources '{"rollout": 8}'`` on the nodes
    meant for rollouts); empty: any node with a free CPU."""
    overlap: bool = _field(False)
    """With workers: the workers play iteration k+1's rollout, with the policy before update k, while the learner
    updates on rollout k (one iteration of policy lag, which PPO's ratio and clipping take; the first iteration
    waits)."""
    learning_rate: float = _field(0.0003, gt=0, le=1)
    """Adam learning rate."""
    anneal_lr: bool = _field(True)
    """Anneal the learning rate linearly to 0 over the run."""
    gamma: float = _field(0.995, ge=0, le=1)
    """Discount per decision of the same seat."""
    gae_lambda: float = _field(0.95, ge=0, le=1)
    """GAE lambda."""
    reward_scale: float = _field(0.01, gt=0)
    """Factor on the settled hand scores (points) to make rewards."""
    minibatch_size: int = _field(4096, ge=1, le=2**20)
    """Transitions per gradient step."""
    update_epochs: int = _field(3, ge=1, le=1000)
    """Passes over each rollout."""
    clip_coef: float = _field(0.2, gt=0, le=10)
    """PPO ratio clip."""
    clip_vloss: bool = _field(False)
    """Clip the value loss like the policy ratio."""
    ent_coef: float = _field(0.01, ge=0, le=1000)
    """Weight of the (masked) entropy bonus."""
    vf_coef: float = _field(0.5, ge=0, le=1000)
    """Weight of the value loss."""
    max_grad_norm: float = _field(0.5, gt=0, le=10**6)
    """Gradient norm clip."""
    norm_adv: bool = _field(True)
    """Normalize advantages per minibatch."""
    target_kl: float = _field(0.0, ge=0, le=1000)
    """Stop an update's epochs early past this approximate KL (0: never)."""
    kl_anchor: str = _field("", valid="empty, init (the checkpoint init names), " + _SHIPPED)
    """A policy the PPO updates are pulled toward (a checkpoint or a shipped policy, e.g. ``ppo-finetuned``; empty:
    none): its network, frozen, on the run's device, gives the masked action distribution of each minibatch's
    observations, and the loss adds ``kl_coef`` times the mean KL(anchor || policy) over the legal actions (logged
    as ``losses/kl_anchor``; not during the warm start). ``init``: the checkpoint ``init`` names (in a chain, the
    previous stage's). Its network shape may differ from the run's."""
    kl_coef: float = _field(0.0, ge=0, le=10**6)
    """Weight of the KL term toward ``kl_anchor`` (0: no term, the update exactly as without an anchor; above 0 needs
    an anchor)."""
    hidden: int = _field(256, **_size("hidden"))
    """Trunk width."""
    layers: int = _field(2, **_size("layers"))
    """Trunk depth."""
    card_embed: int = _field(32, **_size("card_embed"))
    """Features per card row."""
    central_critic: bool = _field(False)
    """Train with a privileged critic: the value network also sees the other three hands (the policy never does;
    checkpoints act from the observation alone)."""
    hands_coef: float = _field(0.0, ge=0, le=10**6)
    """Weight of an auxiliary loss in PPO's updates: a head on the policy's trunk learns which other seat holds each
    card the player cannot see, from the privileged view's hands (``barbu_models.policy.hands_loss``; above 0 needs
    ``central_critic``, whose view holds them, and adds the head to the network; 0: no head, no term)."""
    hands_uniform: int = _field(0, ge=0, le=2**24)
    """With ``hands_coef``: positions of each rollout, drawn at random, on which the hands head learns as a correction
    to the exact uniform marginals (its logits added to their logarithms, as the belief network learns; the marginals
    cost about 0.1 ms a position), the term then on those alone (0: the head's logits alone, on every minibatch's
    rows)."""
    belief_rows: bool = _field(False)
    """The policy also reads where the hidden cards are: the shipped belief network, frozen inside the policy
    network, gives three more card rows (for each other seat, the probability that it holds each card;
    ``barbu_models.policy.with_belief_rows``), computed in the same forward pass. A run with it starts from a network
    without them through trunk weights of zero (the policy unchanged)."""
    bc_iterations: int = _field(0, ge=0, le=10**9)
    """Iterations of imitation before PPO: whole games of ``bc_teacher`` in every seat, the policy trained to pick its
    actions and the value head to predict the returns (0: start from scratch)."""
    bc_teacher: str = _field(
        "heuristic", valid="an agent spec (a registered name or a checkpoint path, with parameters)"
    )
    """The agent imitated during the warm start (a registered name)."""
    bc_epochs: int = _field(2, ge=1, le=1000)
    """Passes over each warm-start rollout."""
    bc_minibatch_size: int = _field(512, ge=1, le=2**20)
    """Examples per imitation gradient step (supervised learning wants smaller batches and more steps than PPO: 512
    imitates the heuristic far better than 4,096)."""
    bc_learning_rate: float = _field(0.001, ge=0, le=1)
    """Adam learning rate during the warm start, constant (0: PPO's schedule)."""
    opp_self: float = _field(0.6, ge=0, le=10**6)
    """Weight of pure self-play games."""
    opp_pool: float = _field(0.2, ge=0, le=10**6)
    """Weight of games against a past snapshot."""
    opp_baselines: float = _field(0.2, ge=0, le=10**6)
    """Weight of games against baseline agents."""
    baselines: str = _field("heuristic,random", valid=_AGENTS + ", or empty")
    """Baseline agents for opponent games (registered names)."""
    opp_learners: int = _field(0, ge=0, le=2)
    """Learning seats in each game against a pool snapshot or baselines: 1 (the policy alone among three opponents, as
    ``barbu exploit``'s best response trains), 2, or 0: one or two at random, drawn per game."""
    snapshot_every: int = _field(5, ge=0, le=10**9)
    """Iterations between snapshots added to the pool."""
    pool_size: int = _field(8, ge=0, le=1024)
    """Snapshots kept (the oldest is dropped)."""
    eval_every: int = _field(10, ge=0, le=10**9)
    """Iterations between duplicate evaluations (0: only at the end)."""
    eval_games: int = _field(200, ge=0, le=10**6)
    """Games per periodic evaluation, against each eval opponent."""
    eval_opponents: str = _field("heuristic,random", valid=_AGENTS + "; empty only without evaluations")
    """Each periodic evaluation plays the policy against three of each of these."""
    final_eval_games: int = _field(1000, ge=0, le=10**6)
    """Games of the final evaluation against each eval opponent (0: none; the summary then has no final figures)."""
    eval_seed: int = _field(12345, **_SEED)
    """Seed of the periodic evaluations' deal sets (the same every time, for comparable points)."""
    final_eval_seed: int = _field(54321, **_SEED)
    """Seed of the final evaluation's deal sets (held out from the periodic ones, which chose the best checkpoint)."""
    checkpoint_minutes: float = _field(5.0, ge=0, le=10**6)
    """Minutes between checkpoints (latest.pt, written after the iteration that passes the mark; 0: after every
    iteration; every periodic evaluation also writes one; best.pt follows the evaluations). A killed run loses at
    most this much work plus one iteration; Ctrl-C loses only the iteration under way."""
    progress: bool = _field(True)
    """Show a progress bar."""

    @property
    def local_workers(self) -> int:
        """Rollout workers on a Ray this run starts on this machine (none with ``ray_address``:
        a cluster's workers use their nodes' cores and memory)."""
        return 0 if self.ray_address else self.workers

    def __post_init__(self) -> None:
        """Every field checked by the schema (``checked``), then the fields that only make
        sense together, and the form of ``stages`` and ``expert``; a ConfigError otherwise."""
        for name, value in checked(Args, vars(self)).items():
            setattr(self, name, value)
        if not all(isinstance(stage, dict) for stage in self.stages):
            raise ConfigError(f"stages must be {VALID['stages'].describe()}, not {show(self.stages)}")
        self.stages, self.expert = [dict(stage) for stage in self.stages], _expert_fields(self.expert)
        if (
            self.exp_name in ("", ".", "..")
            or any(c in self.exp_name for c in "/\\")
            or not self.exp_name.isprintable()
            or len(self.exp_name) > 200
            or len(self.exp_name.encode("utf-8", "surrogatepass")) > 255  # a file name's bytes
        ):
            raise ConfigError(f"exp_name must be {_FOLDER_NAME}, not {show(self.exp_name)}")
        if not self.run_dir or "\0" in self.run_dir:
            raise ConfigError(f"run_dir must be {_FOLDER}, not {show(self.run_dir)}")
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
        if self.hands_coef > 0 and self.expert:
            raise ConfigError(
                f"hands_coef {self.hands_coef:g} in a stage of expert iteration: the term is PPO's "
                "(put it in a PPO stage)"
            )
        if self.belief_rows and self.expert:
            raise ConfigError(
                "belief_rows in a stage of expert iteration: the stage trains its init's network as it is "
                "(add the rows in a PPO stage)"
            )
        if self.hands_coef > 0 and not self.central_critic:
            raise ConfigError(
                f"hands_coef {self.hands_coef:g} needs central_critic: the privileged view holds the hands it learns"
            )
        if self.hands_uniform and not self.hands_coef:
            raise ConfigError(f"hands_uniform {self.hands_uniform} needs hands_coef above 0: it shapes that term")
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
        _check_stage_forms(self.stages, self.exp_name)


# ---------------------------------------------------------------------- expert iteration


@dataclass
class ExpertArgs:
    """An expert-iteration run's settings (``barbu_training.expert``; each is a ``--field`` flag)."""

    student: str = _field("ppo-finetuned", valid="a shipped policy or a checkpoint file")
    """The network that plays the games and is taught: a shipped policy's name or a checkpoint path."""
    searcher: str = _field("pimc-ppo", valid="an agent spec of a pimc search")
    """The search whose action values are the labels (an agent spec of a ``pimc``; by default the guided search with
    the shipped ``ppo-finetuned`` as its rollout policy: give ``pimc-ppo:rollout=PATH`` for another student)."""
    worlds: int = _field(32, ge=1, le=4096)
    """Sampled deals per labelled decision."""
    rules: str = _field("standard", valid=_RULES)
    """Rules preset of the games."""
    games: int = _field(96, ge=1, le=10**7)
    """Whole games played (spread over the workers)."""
    other_share: float = _field(0.05, ge=0, le=1)
    """Share of the other decisions with a choice (defenders' cards, the declarer's cards in the five negative
    contracts) that are labelled too."""
    temperature: float = _field(4.0, gt=0, le=10**6)
    """Points of search value per factor e of the target's odds."""
    workers: int = _field(2, **_CORES)
    """Label-collecting processes (one per core)."""
    games_per_batch: int = _field(16, ge=1, le=16384)
    """Games each worker steps together (the search labels all their decisions of a step at once)."""
    epochs: int = _field(4, ge=1, le=1000)
    """Passes over the labels in the fit."""
    minibatch_size: int = _field(256, ge=1, le=2**20)
    """Labels per gradient step."""
    learning_rate: float = _field(5e-05, gt=0, le=1)
    """Adam learning rate (constant)."""
    value_coef: float = _field(0.5, ge=0, le=10**6)
    """Weight of the value head's squared error to its own outputs at collection."""
    max_grad_norm: float = _field(0.5, gt=0, le=10**6)
    """Gradient norm clip."""
    holdout: float = _field(0.1, ge=0, le=1)
    """Share of each worker's games (the last ones, at least one; none for 0) kept out of the fit, to measure it."""
    seed: int = _field(1, **_SEED)
    """Seed of the games, the search's and the fit's generators."""
    labels: str = _field("", valid="empty or a labels.npz file")
    """Labels saved by an earlier run (``labels.npz``): fit on them instead of searching anew (``holdout`` applies)."""
    out: str = _field("runs/expert", valid=_FOLDER)
    """Folder of the result (``expert.pt``, ``labels.npz``, ``summary.json``)."""
    torch_threads: int = _field(2, **_CORES)
    """Threads of the fit."""

    def __post_init__(self) -> None:
        """Every field checked by the schema (``checked``); a ConfigError naming the field otherwise."""
        for name, value in checked(ExpertArgs, vars(self)).items():
            setattr(self, name, value)
        if not self.student or not self.searcher or not self.out:
            raise ConfigError("student, searcher and out must not be empty")


#: Every ``Args`` field's valid values, from its constraint (docs/training.md has them as a table).
VALID = valid_values(Args)
#: ``ExpertArgs`` fields that a stage of a training chain takes from its own ``Args``
#: (``Args.expert``), not from its ``expert`` mapping.
FROM_THE_RUN = {
    "student": "init",
    "out": "exp_name",
    "seed": "seed",
    "workers": "num_workers",
    "rules": "rules",
    "torch_threads": "torch_threads",
}


def _expert_fields(value: dict) -> dict:
    """An ``expert`` mapping, copied, each field checked as ``ExpertArgs`` checks it; a
    ConfigError naming the field otherwise (an ``ExpertArgs`` field the run sets itself, from
    its own ``init``, ``seed``, ..., is refused)."""
    for key in value:
        if key in FROM_THE_RUN:
            raise ConfigError(f"expert: {show(key)} is the run's {FROM_THE_RUN[key]}, not a field of expert")
        if key not in ExpertArgs.__dataclass_fields__:
            raise ConfigError(f"expert: unknown expert-iteration field {show(key)} (barbu_training.expert.ExpertArgs)")
    defaults = {f.name: f.default for f in dataclasses.fields(ExpertArgs)}
    return {key: item for key, item in checked(ExpertArgs, defaults | value, "expert: ").items() if key in value}


# ---------------------------------------------------------------------- a chain of runs

#: Fields of a chain of ``stages`` that are not every stage's: the base of the stages'
#: names, the first stage's start, the chain's resume (flags for them set the chain's).
CHAIN_FIELDS = ("exp_name", "init", "resume")
#: What a stage may name besides the fields: which checkpoint of the previous stage it
#: starts from (``latest.pt``, the default, or ``best.pt``, the best periodic evaluation's).
INIT_FROM = ("latest", "best")


def _check_stage_forms(stages: list[dict], exp_name: str) -> None:
    """``stages`` checked for their form: known fields, no ``resume`` or
    ``stages`` of its own, an ``init_from`` of ``INIT_FROM`` on a stage after the first that
    names no ``init`` and follows no stage of expert iteration; a ConfigError naming the stage
    otherwise. Each stage's values are checked when its ``Args`` is made
    (``barbu_training.stages.stage_args``)."""
    for k, stage in enumerate(stages, 1):
        where = f"stages: stage {k} of {len(stages)} ({show(stage.get('exp_name', f'{exp_name}-{k}'))})"
        unknown = sorted((key for key in stage if key not in VALID and key != "init_from"), key=repr)
        if unknown:
            names = ", ".join(show(key) for key in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
            raise ConfigError(f"{where}: unknown training field(s) {names}")
        for field, why in (
            ("stages", "a stage has no stages of its own"),
            ("resume", "--resume auto resumes the chain"),
        ):
            if field in stage:
                raise ConfigError(f"{where}: {field} is not a stage's field ({why})")
        if "init_from" not in stage:
            continue
        if stage["init_from"] not in INIT_FROM:
            raise ConfigError(
                f"{where}: init_from must be one of {', '.join(INIT_FROM)}, not {show(stage['init_from'])}"
            )
        if k == 1 or "init" in stage:
            why = "the first stage has no previous stage (init starts it)" if k == 1 else "init names its start"
            raise ConfigError(f"{where}: init_from and init: {why}")
        if stages[k - 2].get("expert"):
            raise ConfigError(f"{where}: init_from: stage {k - 1} makes one network by expert iteration (expert.pt)")


def model_config(args: Args) -> PolicyConfig:
    """The network the run trains (with a privileged critic's input if ``central_critic``, a
    hands head if ``hands_coef``)."""
    return PolicyConfig(
        obs_dim=OBS_DIM,
        card_rows=NUM_CARD_ROWS,
        obs_layout=OBS_LAYOUT,
        hidden=args.hidden,
        layers=args.layers,
        card_embed=args.card_embed,
        state_dim=PRIVILEGED_DIM if args.central_critic else 0,
        hands_head=int(args.hands_coef > 0),
        **(shipped_belief_shape() if args.belief_rows else {}),
    )


def shipped_belief() -> Any:
    """The shipped belief network (``barbu_models.belief.BeliefModel``) that ``belief_rows`` embeds,
    built on the CPU (also when asked under torch's meta device, where the shapes are built)."""
    import torch

    from barbu_env.agents.belief import SHIPPED_MODEL
    from barbu_models.belief import BeliefModel

    with torch.device("cpu"):
        return BeliefModel.load(SHIPPED_MODEL)


@functools.cache
def shipped_belief_shape() -> dict[str, int]:
    """``belief_hidden`` and ``belief_layers`` of the shipped belief network (``belief_rows``)."""
    config = shipped_belief().net.config
    return {"belief_hidden": config.hidden, "belief_layers": config.layers}


# ---------------------------------------------------------------------- files and flags

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
            data = safe_yaml(read_text(config, CONFIG_FILE_LIMIT, "config"), f"config {config}")
        except FileNotFoundError as e:
            raise ConfigError(str(e)) from None
        except InputError as e:  # not a file, too large, not UTF-8, not YAML, an alias bomb
            raise ConfigError(str(e)) from None
        except (ValueError, RecursionError) as e:  # an integer of too many digits, nesting too deep
            raise ConfigError(
                f"config {config}: not a config YAML can read ({quote(' '.join(str(e).split()), 80)})"
            ) from None
        if data is None:  # an empty file (or only comments) would start a default run
            raise ConfigError(f"{config}: the file holds no fields (a training config is a mapping of fields)")
        if not isinstance(data, dict):
            raise ConfigError(f"{config}: a training config is a mapping of fields, not {show(data)}")
        values.update(data)
    flags = dict(overrides or {})
    values.update(flags)
    unknown = sorted((k for k in values if k not in VALID), key=repr)
    if unknown:
        names = ", ".join(show(k) for k in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        raise ConfigError(f"{where}unknown training field(s) {names}; known fields: {sorted(VALID)}")
    if flags and isinstance(values.get("stages"), list):  # the flags are the last word in every stage
        every = {k: v for k, v in flags.items() if k not in CHAIN_FIELDS}
        values["stages"] = [
            stage | every | ({"init": flags["init"]} if k == 0 and "init" in flags else {})
            if isinstance(stage, dict)
            else stage  # not a mapping: Args says so
            for k, stage in enumerate(values["stages"])
        ]
    try:
        return Args(**{name: yaml_number(name, value) for name, value in values.items()})
    except ConfigError as e:
        raise ConfigError(f"{where}{e}") from None


#: A number in exponent form without a dot (``3e-4``, ``1.0e3``): YAML 1.2 reads it as a
#: float, PyYAML (YAML 1.1) as a string; a float field takes it. No other text is a number.
_EXPONENT_FLOAT = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+")


def yaml_number(name: str, value: Any) -> Any:
    """``value``, or the float a float field's string in exponent form writes (``3e-4``)."""
    if Args.__dataclass_fields__[name].type == "float" and isinstance(value, str) and _EXPONENT_FLOAT.fullmatch(value):
        return float(value)
    return value


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass, read from its source; for a schema's
    field (``_field``), with its valid values (``--help`` says them)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    if all("schema" in f.metadata for f in dataclasses.fields(cls)):
        docs = {name: f"{doc} Valid: {valid_values(cls)[name].describe()}." for name, doc in docs.items()}
    return docs


def markdown_table(cls: type = Args) -> str:
    """The table of docs/training.md: each field, its valid values and its default."""
    rows = ["| field | valid values | default |", "|---|---|---|"]
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, int):
            shown = _number(default)
        elif isinstance(default, float):
            shown = repr(default)
        else:
            shown = f"`{json.dumps(default)}`"
        rows.append(f"| `{f.name}` | {valid_values(cls)[f.name].describe()} | {shown} |")
    return "\n".join(rows) + "\n"


def add_field_flags(parser: argparse.ArgumentParser, cls: type, defaults: bool = True) -> argparse.ArgumentParser:
    """One ``--field`` per field of the dataclass ``cls`` of type int, float, str or bool
    (fields of other types are left to config files), its help ``field_docs``'; without
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
    parser = parser or OneLineParser(
        prog="barbu train", description="Self-play PPO for Barbu, one shared masked policy for all four seats."
    )
    parser.add_argument("--config", help="YAML file of Args fields (configs/train/*.yaml)")
    return add_field_flags(parser, Args, defaults=False)
