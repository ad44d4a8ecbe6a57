"""What a checkpoint given to ``resume`` must hold, checked whole before a run starts.

``barbu_models.policy.load_checkpoint`` has checked the network (its config within bounds, its
weights' names, shapes and values) when ``check_resumable`` is called; this checks the
rest of what ``barbu_training.run.Trainer`` restores, so that a shipped policy (no optimizer), a
foreign generator state or a pool snapshot of another network is refused with one line by
``barbu_training.preflight.prepare``, before the run folder is touched, and never fails part way
into a run:

- the network is the one the run's config builds;
- ``optimizer``: Adam's state for exactly this network's parameters (each moment a finite
  tensor of its parameter's shape, the second moment non-negative, the step a finite
  count), with the trainer's own betas, eps and weight decay;
- ``iteration``, ``decisions``, ``next_snapshot_id``: counts; ``minutes``: a finite
  number of at least 0;
- ``history`` and ``best``: the JSON the trainer writes (a list of evaluations, the best
  one's score and path);
- ``update_generator``: a state a torch generator takes;
- ``pool`` and, with ``overlap``, ``rollout_weights`` and ``rollout_pool``: snapshots of
  this network (``barbu_models.policy.check_weights``).

Each check raises a ValueError of one line naming the part that is wrong.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import torch

from barbu_env.util.files import quote
from barbu_models.policy import PolicyConfig, check_weights, checked_config, shapes

#: The values of Adam's settings the trainer makes its optimizer with (``Trainer``:
#: ``Adam(lr, eps=1e-5)``); the learning rate is set every iteration, so it is not checked.
ADAM_SETTINGS = {"betas": (0.9, 0.999), "eps": 1e-5, "weight_decay": 0, "amsgrad": False, "maximize": False}


def check_resumable(payload: dict[str, Any], config: PolicyConfig) -> None:
    """A ValueError naming the first part of ``payload`` (a checkpoint ``load_checkpoint``
    read) that a run of network ``config`` cannot resume from; see the module's docstring."""
    theirs = checked_config(payload["model_config"])
    if theirs != config:
        raise ValueError(
            f"its network ({describe_network(theirs)}) is not the one this config builds ({describe_network(config)}): "
            "set hidden/layers/card_embed/central_critic/hands_coef/belief_rows to the checkpoint's"
        )
    if "optimizer" not in payload:
        raise ValueError(
            "it holds no optimizer state: a policy, not a training checkpoint (start a new run from it with init)"
        )
    expected = shapes(config)
    _check_optimizer(payload["optimizer"], list(expected.values()))
    for name in ("iteration", "decisions"):
        if name not in payload:
            raise ValueError(f"it holds no {name} count: not a training checkpoint")
        _count(name, payload[name])
    if "next_snapshot_id" in payload:
        _count("next_snapshot_id", payload["next_snapshot_id"])
    minutes = payload.get("minutes", 0.0)
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 0 <= minutes < math.inf:
        raise ValueError(f"its minutes must be a finite number of at least 0, not {quote(minutes)}")
    _check_history(payload.get("history", "[]"))
    _check_best(payload.get("best", '{"score": 0, "path": null}'))
    if "update_generator" in payload:
        _check_generator(payload["update_generator"])
    _check_pool("pool", payload.get("pool", {}), expected)
    if "rollout_weights" in payload:
        check_weights(payload["rollout_weights"], expected, "its rollout_weights")
        _check_pool("rollout_pool", payload.get("rollout_pool", {}), expected)


def same_but_added_parts(theirs: PolicyConfig, wanted: PolicyConfig) -> bool:
    """Whether ``theirs`` and ``wanted`` are the same network but for the parts a run may add
    to the one it starts from (a privileged critic, a hands head, the belief rows)."""
    grown = dataclasses.replace(
        theirs,
        state_dim=wanted.state_dim,
        hands_head=wanted.hands_head,
        belief_hidden=wanted.belief_hidden,
        belief_layers=wanted.belief_layers,
    )
    return grown == wanted


def check_startable(theirs: PolicyConfig, wanted: PolicyConfig) -> None:
    """A ValueError of one line unless a run that builds ``wanted`` can start (``init``) from
    a network of ``theirs``: the same but that a privileged critic or the belief rows may be
    added (never dropped) and a hands head added or dropped
    (``barbu_training.run.Trainer._init_from``)."""
    rows_kept = not theirs.belief_hidden or (theirs.belief_hidden, theirs.belief_layers) == (
        wanted.belief_hidden,
        wanted.belief_layers,
    )
    if not same_but_added_parts(theirs, wanted) or theirs.state_dim > wanted.state_dim or not rows_kept:
        raise ValueError(
            f"the checkpoint's network ({describe_network(theirs)}) is not the one this config builds "
            f"({describe_network(wanted)}): set hidden/layers/card_embed/central_critic/hands_coef/belief_rows to "
            "the checkpoint's"
        )


def describe_network(c: PolicyConfig) -> str:
    """A network's shape in words (refusals name the two networks that differ)."""
    critic = "a privileged critic" if c.state_dim else "no privileged critic"
    head = "a hands head" if c.hands_head else "no hands head"
    rows = f"belief rows ({c.belief_hidden}x{c.belief_layers})" if c.belief_hidden else "no belief rows"
    return f"hidden {c.hidden}, layers {c.layers}, card_embed {c.card_embed}, {critic}, {head}, {rows}"


def _count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**15:
        raise ValueError(f"its {name} must be an integer from 0 to 10**15, not {quote(value)}")


def _check_optimizer(state: Any, params: list[tuple[int, ...]]) -> None:
    """Adam's ``state_dict`` for parameters of shapes ``params``, in order."""
    where = "its optimizer state"
    if not isinstance(state, dict) or not isinstance(state.get("state"), dict):
        raise ValueError(f"{where} is {quote(state)}, not Adam's")
    groups = state.get("param_groups")
    if not isinstance(groups, list) or len(groups) != 1 or not isinstance(groups[0], dict):
        raise ValueError(f"{where} has {quote(groups)} as its parameter groups, not one group")
    group = groups[0]
    if group.get("params") != list(range(len(params))):
        raise ValueError(f"{where} is for {quote(group.get('params'))}, not this network's {len(params)} parameters")
    for key, value in ADAM_SETTINGS.items():
        theirs = group.get(key, value)
        if (list(theirs) if isinstance(theirs, (list, tuple)) else theirs) != (
            list(value) if isinstance(value, tuple) else value
        ):
            raise ValueError(f"{where} has {key} {quote(theirs)}; the trainer's Adam has {value}")
    for index, moments in state["state"].items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(params):
            raise ValueError(f"{where} holds moments of parameter {quote(index)}, which this network has not")
        if not isinstance(moments, dict):
            raise ValueError(f"{where} of parameter {index} is {quote(moments)}, not Adam's moments")
        for name in ("exp_avg", "exp_avg_sq"):
            m = moments.get(name)
            if not isinstance(m, torch.Tensor) or not m.is_floating_point() or tuple(m.shape) != params[index]:
                shape = list(m.shape) if isinstance(m, torch.Tensor) else quote(m)
                raise ValueError(
                    f"{where}: {name} of parameter {index} is {shape}, not a tensor of its shape {list(params[index])}"
                )
            if not torch.isfinite(m).all() or (name == "exp_avg_sq" and (m < 0).any()):
                raise ValueError(f"{where}: {name} of parameter {index} holds values Adam cannot have")
        step = moments.get("step")
        if isinstance(step, torch.Tensor) and step.numel() == 1:
            step = step.item()
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 <= step < 2**53:
            raise ValueError(f"{where}: step of parameter {index} is {quote(step)}, not a count")


def _json(name: str, text: Any) -> Any:
    if not isinstance(text, str):
        raise ValueError(f"its {name} is {quote(text)}, not the JSON text the trainer writes")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"its {name} is not JSON: {quote(text)}") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_history(text: Any) -> None:
    """A list of periodic evaluations: ``decisions`` and ``eval`` (opponent -> ``mean``, ``ci``)."""
    history = _json("history", text)
    if not isinstance(history, list):
        raise ValueError(f"its history is {quote(history)}, not a list of evaluations")
    for k, point in enumerate(history):
        ok = isinstance(point, dict) and _number(point.get("decisions")) and isinstance(point.get("eval"), dict)
        ok = ok and all(
            isinstance(v, dict)
            and _number(v.get("mean"))
            and isinstance(v.get("ci"), list)
            and len(v["ci"]) == 2
            and all(map(_number, v["ci"]))
            for v in point["eval"].values()
        )
        if not ok:
            raise ValueError(f"its history's evaluation {k + 1} is {quote(point)}, not one the trainer writes")


def _check_best(text: Any) -> None:
    best = _json("best", text)
    if (
        not isinstance(best, dict)
        or not _number(best.get("score"))
        or not (best.get("path") is None or isinstance(best["path"], str))
    ):
        raise ValueError(f"its best is {quote(best)}, not the best evaluation's score and path")


def _check_generator(state: Any) -> None:
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise ValueError(f"its update_generator is {quote(state)}, not a generator's state")
    try:
        torch.Generator().set_state(state)
    except (RuntimeError, ValueError, TypeError) as e:
        raise ValueError(f"its update_generator is not a state a torch generator takes ({quote(str(e), 60)})") from None


def _check_pool(name: str, pool: Any, expected: dict[str, tuple[int, ...]]) -> None:
    if not isinstance(pool, dict):
        raise ValueError(f"its {name} is {quote(pool)}, not a mapping of snapshots")
    for key, weights in pool.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 18):
            raise ValueError(f"its {name} has a snapshot named {quote(key)}, not a snapshot number")
        check_weights(weights, expected, f"its {name}'s snapshot {key}")
