"""The checks of a training run that need the machine or the files, before it touches
anything on disk: ``prepare``.

``barbu_training.config.Args`` checks the field values (types, ranges, the fields that only
make sense together); ``prepare`` checks the rest, once per run (a chain's stage: once when
the chain is planned, its ``init`` still to come if the previous stage writes it): the rules
load, the device is on this machine and the precision resolves on it, every agent of
``bc_teacher``, ``baselines`` and ``eval_opponents`` can be made, the checkpoints of
``resume``/``init`` and ``kl_anchor`` load (``resume``'s a training checkpoint of the network
the config builds), the first rollouts have a game to play, the run's
memory (``memory_needed``) fits in this machine's, and a run of expert iteration can make
its searcher and fit on every worker's games. It returns what it loaded (``Prepared``), which
the trainer starts from. A failure is a ``ConfigError`` of one line naming the field.
Overlapped local workers and update threads that ask for more cores than there are: an
``OversubscribedWarning`` (``warn_oversubscribed``).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

from barbu_env.agents import make_agent
from barbu_env.agents.pretrained import SHIPPED, checkpoint_path
from barbu_env.agents.registry import parse_agents
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.observation import OBS_DIM
from barbu_env.game.rules import load_rules
from barbu_env.util.extras import MissingExtraError, needs, require
from barbu_env.util.files import error_line, is_file
from barbu_models.device import resolve_device
from barbu_models.policy import BarbuActorCritic, load_checkpoint
from barbu_training.config import Args, ConfigError, model_config
from barbu_training.expert import check_games, stage_expert_args
from barbu_training.precision import resolve_precision
from barbu_training.rollout import buffer_bytes, initial_capacity
from barbu_training.stages import check_startable, describe_network, resume_path

with needs("train", "barbu_training.preflight"):  # one line if the extra is missing
    import torch


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
    """The checks of the module docstring, against ``memory`` bytes (default: this machine's,
    and a CUDA device's own for the networks). Not ``written``: ``init`` is a checkpoint still
    to come (a chain's stage that starts from the previous one's), so neither it, nor the
    anchor when that is ``init``, nor a searcher is loaded."""
    try:
        rules = load_rules(args.rules)
    except (ValueError, OSError) as e:
        raise ConfigError(f"rules: {error_line(e)}") from None
    try:
        device = resolve_device(args.device)
    except ValueError as e:
        raise ConfigError(f"device: {error_line(e)}") from None
    dtype = resolve_precision(args.precision, device)
    if args.workers:
        try:
            require("ray", "ray", f"workers {args.workers}")
        except MissingExtraError as e:
            raise ConfigError(str(e)) from None
    for field, specs in (
        ("bc_teacher", [args.bc_teacher]),
        ("baselines", parse_agents(args.baselines)),
        ("eval_opponents", parse_agents(args.eval_opponents)),
    ):
        for spec in dict.fromkeys(specs):
            try:
                make_agent(spec, rules=rules)
            except (ValueError, TypeError, OSError, MissingExtraError) as e:
                raise ConfigError(f"{field}: {str(spec)!r} is not an agent barbu can make ({error_line(e)})") from None

    def load(field: str, spec: str) -> tuple[Any, dict[str, Any]]:
        path = checkpoint_path(spec)
        if not is_file(path):
            kind = "a checkpoint file" + (f" or a shipped policy ({', '.join(SHIPPED)})" if field != "resume" else "")
            raise ConfigError(f"{field}: {str(spec)!r} is not {kind}")
        try:
            loaded = load_checkpoint(path)  # its network's config and weights checked before it is built
        except (ValueError, OSError) as e:
            raise ConfigError(f"{field}: {error_line(e)}") from None
        wanted = model_config(args)
        theirs = loaded[0].config
        if field == "resume" and (theirs != wanted or "optimizer" not in loaded[1]):
            why = "no optimizer state (a policy: use init)" if theirs == wanted else describe_network(theirs)
            raise ConfigError(f"resume: {path} holds {why}, not a training checkpoint of {describe_network(wanted)}")
        if field == "init" and not args.expert:  # expert iteration trains its init's network as it is
            try:
                check_startable(theirs, wanted)
            except ValueError as e:
                raise ConfigError(f"init: {path}: {e}") from None
        return loaded

    start = None
    init = args.init if written else ""  # a checkpoint still to come is not loaded
    field, spec = ("resume", args.resume) if args.resume else ("init", init)
    if spec:
        start = load(field, resume_path(args) if field == "resume" else spec)
    anchor_spec = init if args.kl_anchor == "init" else args.kl_anchor
    anchor = load("kl_anchor", anchor_spec)[0] if anchor_spec else None
    if args.expert:
        expert = stage_expert_args(args)
        if not expert.labels:
            try:
                check_games(expert)
            except ConfigError as e:
                raise ConfigError(f"expert: {e}") from None
        if written:
            try:
                make_agent(expert.searcher, rules=rules)
            except (ValueError, TypeError, OSError, MissingExtraError) as e:
                raise ConfigError(
                    f"expert: searcher {expert.searcher!r} is not an agent barbu can make ({error_line(e)})"
                ) from None
    pool = start[1].get("pool", {}) if start and args.resume else {}
    if not pool and args.opp_self + (args.opp_baselines if parse_agents(args.baselines) else 0.0) <= 0:
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
    snapshots and their networks), a minibatch's activations and, with ``hands_uniform``,
    its positions' observations, hands and marginals; on the device, the
    network, its gradients and moments, and the activations. Rollout workers on a Ray this
    run starts on this machine (``workers`` without ``ray_address``) add their own buffers
    (the rollout's again, split between them) and each its copies of the policy and the
    pool; workers on a cluster use their nodes' memory, not counted."""
    with torch.device("meta"):  # shapes only: nothing allocated
        model = BarbuActorCritic(model_config(args))
    weights = 4 * sum(p.numel() for p in model.parameters())
    widest = model.trunk[0].in_features + args.hidden * args.layers
    batch = max(args.minibatch_size, args.bc_minibatch_size)
    activations = 16 * batch * widest * (2 if args.central_critic else 1)  # forward, masks, gradients
    on_device = 4 * weights + activations
    need = buffer_bytes(args) + on_device + (3 + 2 * args.pool_size) * weights
    if (
        args.hands_coef > 0 and args.hands_uniform
    ):  # uniform_hands_batch: observations, hands, marginals (float64 first)
        positions = min(args.hands_uniform, initial_capacity(args))
        need += positions * (4 * OBS_DIM + (4 + 4 + 8 + 8) * 3 * NUM_CARDS)
    if args.local_workers:
        need += buffer_bytes(args) + args.local_workers * (1 + 2 * args.pool_size) * weights
    return need, on_device


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: no check
        return None
