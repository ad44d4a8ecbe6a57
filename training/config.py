"""The trainer's arguments as a schema: ``Args`` (a run) and ``ExpertArgs`` (expert iteration).

Each field is declared once, as a pydantic dataclass field: its type (a ``Literal`` for a
choice), its default, its bounds (``Field(ge=..., gt=..., le=...)``) and, in the docstring
under it, its meaning (pydantic's ``use_attribute_docstrings``: the field's description).
Making one validates it: an int given to a float field becomes a float, floats are finite,
an unknown field is refused; the rules between fields are ``Args.__post_init__``'s. A refusal
is pydantic's ``ValidationError`` (a ValueError); ``config_error`` makes it a ``ConfigError``
of one line naming each field that fails and the value given. ``--help``, the table of
docs/training.md and YAML loading are ``barbu_training.config_cli``'s; what needs the machine
or the files (the rules load, the device exists, the checkpoints load) is
``barbu_training.preflight``'s. A chain of runs (``stages``) is a list of mappings here, each
stage's ``Args`` made by ``barbu_training.stages``.
"""

from __future__ import annotations

import functools
import reprlib
from typing import Any, Literal

from barbu_env.agents.registry import parse_agents
from barbu_env.game.observation import NUM_CARD_ROWS, OBS_DIM, OBS_LAYOUT, PRIVILEGED_DIM
from barbu_env.util.extras import needs
from barbu_models.policy import SIZE_LIMITS, PolicyConfig

with needs("train", "barbu_training.config"):  # one line if the extra is missing
    from pydantic import ConfigDict, Field, ValidationError
    from pydantic.dataclasses import dataclass

#: Strict about names and finite floats; the docstring under a field is its description.
SCHEMA = ConfigDict(extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)


class ConfigError(ValueError):
    """A training config that cannot run: one line naming the field(s) and the value given
    (``barbu train`` prints it and exits 1, before anything on disk is touched)."""


def config_error(e: ValidationError, where: str = "") -> ConfigError:
    """pydantic's refusal as one line: each error's field, pydantic's words and the value given."""
    lines = []
    for error in e.errors(include_url=False):
        if error["loc"]:
            lines.append(f"{'.'.join(map(str, error['loc']))}: {error['msg']} (given {reprlib.repr(error['input'])})")
        else:  # a rule between fields (__post_init__)
            lines.append(error["msg"].removeprefix("Value error, "))
    return ConfigError(where + "; ".join(lines))


@dataclass(config=SCHEMA)
class Args:
    """A training run's settings: every field is a config key and a ``--field`` flag. Upper
    bounds keep a run inside what a machine can hold: the rollout buffers (``num_games``), the
    networks (``hidden``, ``layers``, ``card_embed``, ``pool_size``), a minibatch's activations
    (the preflight also compares the whole estimate with this machine's memory). Every float
    field's range is one the update survives: each value in it trains, or stops the run with
    ``TrainingDiverged`` and its last whole iteration kept; none makes it fail (the clip's
    bounds are converted to float32, so ``clip_coef`` is at most 10). How the bounds were
    chosen: docs/training.md."""

    exp_name: str = "barbu_ppo"
    """Name of the run; its folder is ``run_dir/exp_name``."""
    run_dir: str = "runs"
    """Where run folders go."""
    seed: int = Field(1, ge=0, le=2**32 - 1)
    """Seed of everything (deals, sampling, initial weights)."""
    rules: str = "standard"
    """Rules preset (or YAML path) the agent trains under."""
    total_decisions: int = Field(5_000_000, ge=1, le=10**15)
    """Stop after this many environment decisions (all seats, opponents included)."""
    time_budget_minutes: float = Field(0.0, ge=0, le=10**6)
    """Also stop after this many minutes of training (0: no limit; the learning rate anneals over whichever runs out
    first; a resumed run counts its earlier sessions); the final evaluation comes after."""
    resume: str = ""
    """Checkpoint to resume from (weights, optimizer, counters, snapshot pool); ``auto``: the run's own
    ``run_dir/exp_name/checkpoints/latest.pt`` (a chain of ``stages``: the first unfinished stage's)."""
    init: str = ""
    """Checkpoint (or registered pretrained name, e.g. ``ppo``) whose weights start a new run: a fresh optimizer,
    counters and pool, its network shape the config's. Fine-tuning from a shipped policy; ``resume`` carries on a
    run instead (and wins if both are set)."""
    stages: list[dict] = Field(default_factory=list)
    """A chain of runs, in order, each a mapping of the fields it changes from the top level (config files only: no
    flag). Stage k runs in ``run_dir/<exp_name>-<k>`` unless it names its ``exp_name``; each stage after the first
    starts from the previous one's ``latest.pt`` (``init_from: best``: its ``best.pt``, which needs its
    ``eval_every``) unless it names its own ``init``; the top level's ``init`` starts the first. Flags win over the
    stages' own values, but for ``exp_name``, ``init`` (the first stage's) and ``resume``: ``--resume auto`` skips
    the stages that finished (a ``summary.json`` in their folder) and resumes the first that did not from its
    ``latest.pt``."""
    expert: dict = Field(default_factory=dict)
    """Make this run's network by expert iteration (``barbu_training.expert``) instead of PPO: the ``ExpertArgs``
    fields to set (``worlds``, ``games``, ``temperature``, ...; config files only). ``init`` is the student; the
    searcher is ``pimc-ppo`` with the student as its rollout policy and prior unless the mapping names one;
    ``seed``, ``num_workers``, ``rules`` and ``torch_threads`` are the run's; the result is ``expert.pt`` in the run
    folder, which the next stage of a chain starts from. A stage's own field, not the top level's of a chain."""
    num_games: int = Field(512, ge=1, le=16384)
    """Games the batched engine (``barbu_env.game.vector.VectorBarbu``) steps together in the learner process; each
    rollout plays them to the end of their episode (``episode``), about 1,570 decisions per whole game."""
    episode: Literal["game", "round", "hand"] = "game"
    """What a rollout's game is: ``game`` (all 28 hands), ``round`` (the first seven hands) or ``hand`` (the first hand
    only), the start of a whole game exactly (docs/rules.md#episodes); each rollout plays ``num_games`` of them.
    Evaluations always play whole games."""
    num_workers: int = Field(2, ge=1, le=1024)
    """Worker processes of the duplicate evaluations (one per core)."""
    torch_threads: int = Field(2, ge=1, le=1024)
    """Threads of the learner process (the rollouts' inference, the update)."""
    device: str = "auto"
    """Where the network computes, in the rollouts' inference and the update: ``auto`` (a CUDA GPU when there is one,
    else Apple's MPS, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; a device this machine lacks is an
    error (``barbu_models.device.resolve_device``). Checkpoints are saved on the CPU, so they load anywhere, and a
    resumed run carries on on this device; the duplicate evaluations play the checkpoints on the CPU, in
    ``num_workers`` processes."""
    precision: Literal["auto", "float32", "bfloat16"] = "auto"
    """Matrix products of the network in the rollouts and the update: ``float32``, ``bfloat16`` (mixed precision:
    bfloat16 products accumulated in float32, float32 weights and losses), or ``auto``: bfloat16 where the device
    multiplies it natively (a CPU with AVX-512 BF16 or AMX, a CUDA GPU that supports it), else float32
    (``barbu_training.precision``)."""
    skip_forced: bool = True
    """A decision with a single legal action is played without asking anyone and is not a transition: the seat's
    rewards keep flowing to its previous decision (about 23% of decisions are forced: last cards of a suit, doubling
    turns with no choice)."""
    workers: int = Field(0, ge=0, le=1024)
    """Rollout workers: Ray actors that play the rollouts, each its share of the ``num_games`` games with a CPU copy of
    the policy, while the learner process updates (``barbu_training.workers``); 0: the rollouts play in the learner
    process. One worker plays exactly the in-process rollouts."""
    ray_address: str = ""
    """The Ray cluster the workers run on: empty (a local Ray started for the run, or the one this process started
    already), ``auto`` (the cluster ``ray start`` runs on this machine) or a cluster's address."""
    worker_resource: str = ""
    """A custom Ray resource each worker takes one unit of (``ray start --resources '{"rollout": 8}'`` on the nodes
    meant for rollouts); empty: any node with a free CPU."""
    overlap: bool = False
    """With workers: the workers play iteration k+1's rollout, with the policy before update k, while the learner
    updates on rollout k (one iteration of policy lag, which PPO's ratio and clipping take; the first iteration
    waits)."""
    learning_rate: float = Field(0.0003, gt=0, le=1)
    """Adam learning rate."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over the run."""
    gamma: float = Field(0.995, ge=0, le=1)
    """Discount per decision of the same seat."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE lambda."""
    reward_scale: float = Field(0.01, gt=0)
    """Factor on the settled hand scores (points) to make rewards."""
    minibatch_size: int = Field(4096, ge=1, le=2**20)
    """Transitions per gradient step."""
    update_epochs: int = Field(3, ge=1, le=1000)
    """Passes over each rollout."""
    clip_coef: float = Field(0.2, gt=0, le=10)
    """PPO ratio clip."""
    clip_vloss: bool = False
    """Clip the value loss like the policy ratio."""
    ent_coef: float = Field(0.01, ge=0, le=1000)
    """Weight of the (masked) entropy bonus."""
    vf_coef: float = Field(0.5, ge=0, le=1000)
    """Weight of the value loss."""
    max_grad_norm: float = Field(0.5, gt=0, le=10**6)
    """Gradient norm clip."""
    norm_adv: bool = True
    """Normalize advantages per minibatch."""
    target_kl: float = Field(0.0, ge=0, le=1000)
    """Stop an update's epochs early past this approximate KL (0: never)."""
    kl_anchor: str = ""
    """A policy the PPO updates are pulled toward (a checkpoint or a shipped policy, e.g. ``ppo-finetuned``; empty:
    none): its network, frozen, on the run's device, gives the masked action distribution of each minibatch's
    observations, and the loss adds ``kl_coef`` times the mean KL(anchor || policy) over the legal actions (logged
    as ``losses/kl_anchor``; not during the warm start). ``init``: the checkpoint ``init`` names (in a chain, the
    previous stage's). Its network shape may differ from the run's."""
    kl_coef: float = Field(0.0, ge=0, le=10**6)
    """Weight of the KL term toward ``kl_anchor`` (0: no term, the update exactly as without an anchor; above 0 needs
    an anchor)."""
    hidden: int = Field(256, ge=1, le=SIZE_LIMITS["hidden"][1])
    """Trunk width."""
    layers: int = Field(2, ge=1, le=SIZE_LIMITS["layers"][1])
    """Trunk depth."""
    card_embed: int = Field(32, ge=1, le=SIZE_LIMITS["card_embed"][1])
    """Features per card row."""
    central_critic: bool = False
    """Train with a privileged critic: the value network also sees the other three hands (the policy never does;
    checkpoints act from the observation alone)."""
    hands_coef: float = Field(0.0, ge=0, le=10**6)
    """Weight of an auxiliary loss in PPO's updates: a head on the policy's trunk learns which other seat holds each
    card the player cannot see, from the privileged view's hands (``barbu_models.policy.hands_loss``; above 0 needs
    ``central_critic``, whose view holds them, and adds the head to the network; 0: no head, no term)."""
    hands_uniform: int = Field(0, ge=0, le=2**24)
    """With ``hands_coef``: positions of each rollout, drawn at random, on which the hands head learns as a correction
    to the exact uniform marginals (its logits added to their logarithms, as the belief network learns; the marginals
    cost about 0.1 ms a position), the term then on those alone (0: the head's logits alone, on every minibatch's
    rows)."""
    belief_rows: bool = False
    """The policy also reads where the hidden cards are: the shipped belief network, frozen inside the policy
    network, gives three more card rows (for each other seat, the probability that it holds each card;
    ``barbu_models.policy.with_belief_rows``), computed in the same forward pass. A run with it starts from a network
    without them through trunk weights of zero (the policy unchanged)."""
    bc_iterations: int = Field(0, ge=0, le=10**9)
    """Iterations of imitation before PPO: whole games of ``bc_teacher`` in every seat, the policy trained to pick its
    actions and the value head to predict the returns (0: start from scratch)."""
    bc_teacher: str = "heuristic"
    """The agent imitated during the warm start (a registered name)."""
    bc_epochs: int = Field(2, ge=1, le=1000)
    """Passes over each warm-start rollout."""
    bc_minibatch_size: int = Field(512, ge=1, le=2**20)
    """Examples per imitation gradient step (supervised learning wants smaller batches and more steps than PPO: 512
    imitates the heuristic far better than 4,096)."""
    bc_learning_rate: float = Field(0.001, ge=0, le=1)
    """Adam learning rate during the warm start, constant (0: PPO's schedule)."""
    opp_self: float = Field(0.6, ge=0, le=10**6)
    """Weight of pure self-play games."""
    opp_pool: float = Field(0.2, ge=0, le=10**6)
    """Weight of games against a past snapshot."""
    opp_baselines: float = Field(0.2, ge=0, le=10**6)
    """Weight of games against baseline agents."""
    baselines: str = "heuristic,random"
    """Baseline agents for opponent games (registered names)."""
    opp_learners: int = Field(0, ge=0, le=2)
    """Learning seats in each game against a pool snapshot or baselines: 1 (the policy alone among three opponents, as
    ``barbu exploit``'s best response trains), 2, or 0: one or two at random, drawn per game."""
    snapshot_every: int = Field(5, ge=0, le=10**9)
    """Iterations between snapshots added to the pool."""
    pool_size: int = Field(8, ge=0, le=1024)
    """Snapshots kept (the oldest is dropped)."""
    eval_every: int = Field(10, ge=0, le=10**9)
    """Iterations between duplicate evaluations (0: only at the end)."""
    eval_games: int = Field(200, ge=0, le=10**6)
    """Games per periodic evaluation, against each eval opponent."""
    eval_opponents: str = "heuristic,random"
    """Each periodic evaluation plays the policy against three of each of these."""
    final_eval_games: int = Field(1000, ge=0, le=10**6)
    """Games of the final evaluation against each eval opponent (0: none; the summary then has no final figures)."""
    eval_seed: int = Field(12345, ge=0, le=2**32 - 1)
    """Seed of the periodic evaluations' deal sets (the same every time, for comparable points)."""
    final_eval_seed: int = Field(54321, ge=0, le=2**32 - 1)
    """Seed of the final evaluation's deal sets (held out from the periodic ones, which chose the best checkpoint)."""
    checkpoint_minutes: float = Field(5.0, ge=0, le=10**6)
    """Minutes between checkpoints (latest.pt, written after the iteration that passes the mark; 0: after every
    iteration; every periodic evaluation also writes one; best.pt follows the evaluations). A killed run loses at
    most this much work plus one iteration; Ctrl-C loses only the iteration under way."""
    progress: bool = True
    """Show a progress bar (it moves during each rollout); false: a plain line every 30 s instead."""

    @property
    def local_workers(self) -> int:
        """Rollout workers on a Ray this run starts on this machine (none with ``ray_address``:
        a cluster's workers use their nodes' cores and memory)."""
        return 0 if self.ray_address else self.workers

    def __post_init__(self) -> None:
        """The rules between fields (the schema has checked each); a ValueError naming them otherwise."""
        if self.exp_name in ("", ".", "..") or any(c in self.exp_name for c in "/\\"):
            raise ValueError(f"exp_name must be a folder name (no slashes, not . or ..), not {self.exp_name!r}")
        if not self.run_dir:
            raise ValueError("run_dir must be a folder path, not empty")
        if self.eval_every and self.eval_games < 1:
            raise ValueError(f"eval_every {self.eval_every} needs eval_games of at least 1, not {self.eval_games}")
        if not parse_agents(self.eval_opponents) and (self.eval_every or self.final_eval_games):
            raise ValueError(
                "eval_opponents names no agent, but eval_every or final_eval_games asks for evaluations: "
                "name one (random, heuristic, ...) or set both to 0"
            )
        if self.opp_self + self.opp_pool + (self.opp_baselines if parse_agents(self.baselines) else 0.0) <= 0:
            raise ValueError("opp_self, opp_pool and opp_baselines (with baselines named) are all 0: no game to play")
        if self.kl_coef > 0 and not self.kl_anchor:
            raise ValueError(
                f"kl_coef {self.kl_coef:g} needs a kl_anchor to pull toward (a checkpoint or shipped policy)"
            )
        if self.hands_coef > 0 and not self.central_critic:
            raise ValueError(
                f"hands_coef {self.hands_coef:g} needs central_critic: the privileged view holds the hands it learns"
            )
        if self.hands_uniform and not self.hands_coef:
            raise ValueError(f"hands_uniform {self.hands_uniform} needs hands_coef above 0: it shapes that term")
        if self.expert and (self.hands_coef > 0 or self.belief_rows):
            raise ValueError(
                "hands_coef and belief_rows are PPO's: a stage of expert iteration trains its init's network as it is"
            )
        if not self.workers:
            alone = [n for n in ("ray_address", "worker_resource", "overlap") if getattr(self, n)]
            if alone:
                raise ValueError(f"{', '.join(alone)} set with workers 0: they are the rollout workers' settings")
        elif self.num_games < self.workers:
            raise ValueError(f"workers {self.workers} need num_games of at least {self.workers}, not {self.num_games}")
        if self.stages and self.expert:
            raise ValueError(
                "expert is a stage's field: put it in the stage that makes its network by expert iteration"
            )
        if not self.stages and not self.init and (self.expert or self.kl_anchor == "init"):
            field = "expert" if self.expert else "kl_anchor init"
            raise ValueError(f"{field} needs an init: the network to {'teach' if self.expert else 'pull toward'}")
        taken = [key for key in self.expert if key in FROM_THE_RUN]
        if taken:
            raise ValueError(f"expert: {taken[0]} is the run's {FROM_THE_RUN[taken[0]]}, not a field of expert")
        try:
            ExpertArgs(**self.expert)
        except ValidationError as e:
            raise ValueError(str(config_error(e, "expert: "))) from None


@dataclass(config=SCHEMA)
class ExpertArgs:
    """An expert-iteration run's settings (``barbu_training.expert``; each is a ``--field`` flag)."""

    student: str = Field("ppo-finetuned", min_length=1)
    """The network that plays the games and is taught: a shipped policy's name or a checkpoint path."""
    searcher: str = Field("pimc-ppo", min_length=1)
    """The search whose action values are the labels (an agent spec of a ``pimc``; by default the guided search with
    the shipped ``ppo-finetuned`` as its rollout policy: give ``pimc-ppo:rollout=PATH`` for another student)."""
    worlds: int = Field(32, ge=1, le=4096)
    """Sampled deals per labelled decision."""
    rules: str = "standard"
    """Rules preset of the games."""
    games: int = Field(96, ge=1, le=10**7)
    """Whole games played (spread over the workers)."""
    other_share: float = Field(0.05, ge=0, le=1)
    """Share of the other decisions with a choice (defenders' cards, the declarer's cards in the five negative
    contracts) that are labelled too."""
    temperature: float = Field(4.0, gt=0, le=10**6)
    """Points of search value per factor e of the target's odds."""
    workers: int = Field(2, ge=1, le=1024)
    """Label-collecting processes (one per core)."""
    games_per_batch: int = Field(16, ge=1, le=16384)
    """Games each worker steps together (the search labels all their decisions of a step at once)."""
    epochs: int = Field(4, ge=1, le=1000)
    """Passes over the labels in the fit."""
    minibatch_size: int = Field(256, ge=1, le=2**20)
    """Labels per gradient step."""
    learning_rate: float = Field(5e-05, gt=0, le=1)
    """Adam learning rate (constant)."""
    value_coef: float = Field(0.5, ge=0, le=10**6)
    """Weight of the value head's squared error to its own outputs at collection."""
    max_grad_norm: float = Field(0.5, gt=0, le=10**6)
    """Gradient norm clip."""
    holdout: float = Field(0.1, ge=0, le=1)
    """Share of each worker's games (the last ones, at least one; none for 0) kept out of the fit, to measure it."""
    seed: int = Field(1, ge=0, le=2**32 - 1)
    """Seed of the games, the search's and the fit's generators."""
    labels: str = ""
    """Labels saved by an earlier run (``labels.npz``): fit on them instead of searching anew (``holdout`` applies)."""
    out: str = Field("runs/expert", min_length=1)
    """Folder of the result (``expert.pt``, ``labels.npz``, ``summary.json``)."""
    torch_threads: int = Field(2, ge=1, le=1024)
    """Threads of the fit."""


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
