"""Trained policies as agents: ``make_agent("runs/x/checkpoints/best.pt")`` works anywhere an
agent name does (``barbu eval --agents runs/x/checkpoints/best.pt,heuristic,...``), with
parameters ``deterministic`` and ``device`` (``make_agent(path, device="cuda")``, or
``best.pt:device=cuda`` as a spec; ``barbu eval --device``). The network computes on
its device; observations go to it once per call and the actions come back once.

The agent registry reaches ``load_policy_agent`` through ``barbu_training.checkpoint_loader``
(the ``barbu.agent_loaders`` entry point), which imports this module, and torch, only
for a ``.pt`` file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from barbu_env.util.extras import needs

with needs("train", "barbu_training.policy_agent"):  # one line if the extra is missing
    import torch

from barbu_env.agents.base import Agent
from barbu_models.device import one_thread, resolve_device
from barbu_models.policy import BarbuActorCritic, MaskedCategorical, load_checkpoint

#: (resolved path, mtime, device) -> model: tournaments build agents for every game.
_CACHE: dict[tuple[str, float, str], BarbuActorCritic] = {}


def cached_model(path: str | Path, device: str | torch.device = "cpu") -> BarbuActorCritic:
    """The checkpoint's network on ``device``, read once per file version and device."""
    p = Path(path).resolve()
    where = resolve_device(device)
    key = (str(p), p.stat().st_mtime, str(where))
    if key not in _CACHE:
        with one_thread():
            _CACHE[key] = load_checkpoint(p, where)[0]
    return _CACHE[key]


def model_device(model: Any) -> torch.device:
    """The device a network computes on: its parameters' for a torch module, else the CPU
    (the adapters of ``barbu_training.external_agents`` take CPU tensors)."""
    if isinstance(model, torch.nn.Module):
        return next(model.parameters()).device
    return torch.device("cpu")


class PolicyAgent(Agent):
    """A masked actor-critic playing its most likely legal action (``deterministic=True``,
    the default: the usual way to evaluate a trained policy, and worth ~100 points per
    game against the heuristic over sampling) or sampling its policy with its own seeded
    torch generator (``deterministic=False``).

    ``act_batch`` is one forward pass for a batch. Instances on the same network share
    its ``batch_key`` (agents loaded from the same file do, through the model cache), so
    the batched play driver asks them together (``act_batch`` with ``instances``) — one
    forward pass for every game's decision, then each instance picks its own rows'
    actions, a sampling one drawing with its own generator (batched Gumbel-max). The
    trainer plays its pool snapshots as sampling PolicyAgents.

    The network computes on its own device (``model_device``); each instance's generator
    is a CPU one, so an agent draws the same actions on any device (up to the rounding of
    the network's products)."""

    def __init__(self, model: BarbuActorCritic, seed: int = 0, deterministic: bool = True, name: str = "policy"):
        self.model = model
        self.device = model_device(model)
        self.batch_key = model
        self.deterministic = deterministic
        self.name = name
        self.generator = torch.Generator().manual_seed(seed)

    def probs_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities ``[B, 85]`` (exactly 0 off the mask)."""
        with one_thread():
            return _distribution(self.model, observations, masks).probs.cpu().numpy()

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[PolicyAgent] | None = None
    ) -> np.ndarray:
        """Row i's action by ``instances[i]`` (all on this network; by default this agent
        for every row): one forward pass; the greedy instances' rows take their most
        likely legal action, each sampling instance draws its rows' actions with its own
        generator. Torch computes on one CPU thread (``one_thread``)."""
        with one_thread():
            return self._act_batch(observations, masks, instances)

    def _act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[PolicyAgent] | None
    ) -> np.ndarray:
        instances = [self] * len(observations) if instances is None else instances
        dist = _distribution(self.model, observations, masks)
        sampling: dict[int, list[int]] = {}  # a sampling instance's rows, by identity
        for i, agent in enumerate(instances):
            if not agent.deterministic:
                sampling.setdefault(id(agent), []).append(i)
        if len(sampling) == 1 and len(next(iter(sampling.values()))) == len(instances):  # one sampler, every row
            return dist.sample(instances[0].generator).cpu().numpy().astype(np.int64)
        actions = dist.probs.argmax(dim=-1)
        for rows in sampling.values():
            r = torch.tensor(rows, device=actions.device)
            actions[r] = MaskedCategorical(dist.logits[r], dist.mask[r]).sample(instances[rows[0]].generator)
        return actions.cpu().numpy().astype(np.int64)


def _distribution(model: BarbuActorCritic, observations: np.ndarray, masks: np.ndarray) -> MaskedCategorical:
    """The network's masked distribution over a numpy batch (no gradients), on the
    network's device."""
    device = model_device(model)
    with torch.no_grad():
        return model.distribution(
            torch.as_tensor(observations, dtype=torch.float32, device=device), torch.as_tensor(masks, device=device)
        )


def load_policy_agent(
    path: str | Path,
    seed: int = 0,
    deterministic: bool = True,
    device: str = "cpu",
    rules: Any = None,
    trust: bool = False,
    **unknown: Any,
) -> PolicyAgent | None:
    """A PolicyAgent (greedy unless ``deterministic=False``) from a checkpoint written by
    ``barbu_models.policy.save_checkpoint``, its network on ``device`` (``cpu`` by default:
    tournaments play in several processes; ``auto``, ``cuda``, ``cuda:N``, ``mps``; a
    device this machine lacks is a ValueError); None for other files. ``rules`` is
    ignored (a policy plays by what it learned), and so is ``trust`` (the checkpoint is
    read with ``weights_only=True``: it cannot run code); any other parameter is a
    ValueError."""
    if Path(path).suffix != ".pt":
        return None
    if unknown:
        raise ValueError(
            f"checkpoint agent {Path(path).name} has no parameter {', '.join(sorted(unknown))} "
            f"(it takes: deterministic, device)"
        )
    return PolicyAgent(cached_model(path, device), seed=seed, deterministic=deterministic, name=Path(path).stem)
