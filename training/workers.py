"""Rollout workers on Ray: ``barbu train --workers N``.

The learner (``barbu_training.run.Trainer``) keeps the network, the optimizer and the update;
``N`` Ray actors (``RolloutWorker``) play the rollouts. Each worker steps its own share of
the ``num_games`` games (``shares``) on its own ``VectorBarbu``, with a CPU copy of the
policy (and of the pool snapshots and baselines, through the same ``Collector`` as the
in-process path), computes its learning seats' advantages (per-seat GAE, on its own games)
and returns its transitions packed (``pack``). The learner gathers the shares in worker
order, unpacks them and concatenates them into one ``Rollout`` (``merge``): game ids are
numbered across the shares, worker 0's first.

Seeds: share ``w`` of iteration ``i`` draws everything from ``rollout_generators(seed, i,
w)``: share 0 from ``[seed, i]``, the in-process path's one share; share ``w > 0`` from
``[seed, i, w]``. So one worker plays exactly the in-process rollout (the same games, the
same samples), and ``N`` workers play share 0's games plus ``N - 1`` others.

What travels, per iteration: the policy's weights once (``ray.put``, read by every
worker), each pool snapshot once in its life (workers keep the snapshots they have seen),
and back each worker's packed transitions. The packing is exact: an observation's columns
that hold only 0 and 1 in the whole share travel as bits (``np.packbits``' order); the
other columns (scores, counts) as float32; masks as bits; actions as uint8. About 300 bytes
a transition on the wire against 4.6 KB in memory (``wire_bytes``; docs/training.md).

Placement: each worker takes one CPU, and one unit of ``worker_resource`` when it is set
(a custom resource that only some nodes offer, ``ray start --resources``), on the cluster
``ray_address`` names (``auto``: the running one), or on a local Ray started for the run
(``ray.init``; one the process started already is used as it is). Workers are not
restarted: a worker that dies ends the run with ``WorkerLost`` (``barbu_training.run`` saves the
last whole iteration first). On a cluster, every node needs barbu installed as on the
learner, and the checkpoints and rules files the run names at the same paths.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from barbu_env.util.extras import needs, require

with needs("train", "barbu_training.workers"):  # one line if the extra is missing
    import torch

from barbu_env.game.observation import OBS_DIM
from barbu_models.policy import BarbuActorCritic
from barbu_training.config import Args, model_config
from barbu_training.precision import resolve_precision
from barbu_training.rollout import Collector, Rollout, rollout_generators

#: Seconds the learner waits for every worker to start (a cluster short of CPUs or of
#: ``worker_resource`` never places some): then a ``WorkerLost`` naming how many started.
START_TIMEOUT = 300.0


class WorkerLost(RuntimeError):
    """A rollout worker died, or never started; the run cannot go on without its games."""


# ---------------------------------------------------------------------- the shares


def shares(num_games: int, workers: int) -> list[int]:
    """Games each worker plays: ``num_games`` split as evenly as can be, the first
    workers taking one more.

    >>> shares(10, 4)
    [3, 3, 2, 2]
    """
    return [len(s) for s in np.array_split(np.arange(num_games), workers)]


# ---------------------------------------------------------------------- the wire format


@numba.njit(cache=True)
def _pack_bits(x):  # compiled: a share's observations are 10^5-10^6 rows of 1,132 floats
    rows, cols = x.shape
    bits = np.zeros((rows, (cols + 7) // 8), dtype=np.uint8)
    valued = np.zeros(cols, dtype=np.bool_)  # a column holding something other than 0 and 1
    for t in range(rows):
        for c in range(cols):
            v = x[t, c]
            if v != 0.0:
                bits[t, c >> 3] |= np.uint8(128 >> (c & 7))
                if v != 1.0:
                    valued[c] = True
    return bits, valued


@numba.njit(cache=True)
def _unpack_bits(bits, cols, out):
    for t in range(bits.shape[0]):
        for c in range(cols):
            out[t, c] = np.float32((bits[t, c >> 3] >> (7 - (c & 7))) & 1)


def pack_rows(x: np.ndarray) -> dict[str, np.ndarray]:
    """A float32 matrix, exactly, in few bytes: its columns of 0s and 1s as bits, the
    others (``valued``) as float32.

    >>> x = np.array([[0, 1, 0.5], [1, 0, 2]], dtype=np.float32)
    >>> p = pack_rows(x)
    >>> p["valued"].tolist(), p["values"].tolist()
    ([False, False, True], [[0.5], [2.0]])
    >>> bool((unpack_rows(p) == x).all())
    True
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits, valued = _pack_bits(x)
    return {"bits": bits, "valued": valued, "values": np.ascontiguousarray(x[:, valued])}


def unpack_rows(p: dict[str, np.ndarray]) -> np.ndarray:
    """The float32 matrix ``pack_rows`` packed."""
    valued = p["valued"]
    out = np.empty((len(p["bits"]), len(valued)), dtype=np.float32)
    _unpack_bits(p["bits"], len(valued), out)
    out[:, valued] = p["values"]
    return out


#: Transition fields that travel as they are (actions go as uint8, masks as bits).
PLAIN = ("logprobs", "values", "advantages", "returns", "rewards", "dones", "game_ids", "seats")
#: Per-game fields.
PER_GAME = ("final_scores", "learning", "kinds")


def pack(rollout: Rollout) -> dict[str, Any]:
    """A rollout as it crosses the wire (``unpack`` restores it exactly)."""
    out: dict[str, Any] = {k: getattr(rollout, k) for k in PLAIN + PER_GAME}
    out["obs"] = pack_rows(rollout.obs)
    out["states"] = None if rollout.states is None else pack_rows(rollout.states[:, OBS_DIM:])
    out["masks"] = np.packbits(rollout.masks, axis=1)
    out["mask_width"] = rollout.masks.shape[1]
    out["actions"] = rollout.actions.astype(np.uint8)  # ids < 85
    out["decisions"] = rollout.decisions
    return out


def unpack(p: dict[str, Any]) -> Rollout:
    """The rollout ``pack`` packed."""
    obs = unpack_rows(p["obs"])
    states = None if p["states"] is None else np.concatenate([obs, unpack_rows(p["states"])], axis=1)
    masks = np.unpackbits(p["masks"], axis=1, count=p["mask_width"]).view(bool)
    return Rollout(
        obs=obs,
        states=states,
        masks=masks,
        actions=p["actions"].astype(np.int64),
        decisions=int(p["decisions"]),
        **{k: np.array(p[k]) for k in PLAIN + PER_GAME},  # writable: Ray's arrays are read-only views
    )


def wire_bytes(p: dict[str, Any]) -> int:
    """Bytes of a packed rollout's arrays."""
    sizes = [v.nbytes for v in p.values() if isinstance(v, np.ndarray)]
    sizes += [a.nbytes for v in p.values() if isinstance(v, dict) for a in v.values()]
    return int(sum(sizes))


def merge(parts: list[Rollout]) -> Rollout:
    """One rollout from the shares, in order: transitions and games concatenated, game
    ids numbered across the shares. One share is returned as it is."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(r.kinds) for r in parts[:-1]])
    fields = {}
    for f in dataclasses.fields(Rollout):
        if f.name in ("decisions", "states"):
            continue
        fields[f.name] = np.concatenate([getattr(r, f.name) for r in parts])
    fields["game_ids"] = np.concatenate([r.game_ids + np.int32(o) for r, o in zip(parts, offsets)])
    states = None if parts[0].states is None else np.concatenate([r.states for r in parts])
    return Rollout(states=states, decisions=sum(r.decisions for r in parts), **fields)


# ---------------------------------------------------------------------- a worker


class RolloutWorker:
    """One share's rollouts, in its own process (a Ray actor; ``WorkerGroup`` makes it
    one). ``args`` is the run's, ``index`` the worker's share and ``games`` its size; the
    network runs on this process's CPU, on one thread, in the precision ``auto`` gives
    this CPU (or the run's ``precision`` if it names one)."""

    def __init__(self, args: Args, rules, index: int, games: int):
        torch.set_num_threads(1)  # the worker's one CPU
        self.index = index
        self.args = dataclasses.replace(
            args, num_games=games, workers=0, ray_address="", worker_resource="", overlap=False, device="cpu"
        )
        self.collector = Collector(self.args, rules, dtype=resolve_precision(args.precision, "cpu"))
        self.model = BarbuActorCritic(model_config(self.args)).eval()
        self.snapshots: dict[int, dict] = {}  # pool id -> state dict, fetched once

    def node_id(self) -> str:
        """The Ray node this worker runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def collect(self, weights: dict, pool: dict[int, Any], iteration: int, teacher: str) -> dict[str, Any]:
        """This worker's share of iteration ``iteration``'s rollout, with the policy's
        ``weights`` and the pool (id -> an object ref of a snapshot's state dict), packed."""
        import ray

        self.model.load_state_dict(weights)
        for sid in [s for s in self.snapshots if s not in pool]:
            del self.snapshots[sid]
        missing = [sid for sid in pool if sid not in self.snapshots]
        for sid, state in zip(missing, ray.get([pool[s] for s in missing])):
            self.snapshots[sid] = state
        rng, gen = rollout_generators(self.args.seed, iteration, self.index)
        snapshots = {sid: self.snapshots[sid] for sid in pool}
        return pack(self.collector.collect(self.model, snapshots, rng, gen, teacher))


# ---------------------------------------------------------------------- the learner's side


@dataclass
class Pending:
    """An iteration's rollout under way: one object ref a worker."""

    iteration: int
    refs: list


class WorkerGroup:
    """The run's ``args.workers`` rollout workers, started on Ray (``ray_address``; a
    local Ray if none is running and no address is given), placed by Ray with one CPU each
    and one unit of ``worker_resource`` if set. ``launch`` starts an iteration's rollout,
    ``gather`` waits for it; ``close`` ends the workers (and the Ray this group started)."""

    def __init__(self, args: Args, rules):
        ray = require("ray", "ray", "barbu train --workers")
        self.ray = ray
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            local = {} if args.ray_address else {"num_cpus": max(os.cpu_count() or 1, args.workers)}
            ray.init(address=args.ray_address or None, include_dashboard=False, log_to_driver=False, **local)
        options: dict[str, Any] = {"num_cpus": 1, "max_restarts": 0}
        if args.worker_resource:
            options["resources"] = {args.worker_resource: 1}
        actor = ray.remote(RolloutWorker).options(**options)
        self.actors = [actor.remote(args, rules, w, g) for w, g in enumerate(shares(args.num_games, args.workers))]
        self.snapshot_refs: dict[int, Any] = {}  # pool id -> its state dict in the object store
        self.wire = {"bytes": 0, "transitions": 0}
        self.nodes: list[str] = []
        refs = [a.node_id.remote() for a in self.actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=START_TIMEOUT)
        if len(ready) < len(refs):
            self.close()
            where = f" with one unit of {args.worker_resource!r} each" if args.worker_resource else ""
            raise WorkerLost(
                f"{len(ready)} of {args.workers} rollout workers started in {START_TIMEOUT:.0f} s: the Ray cluster "
                f"has not the CPUs{where} for them (ray status shows what it has)"
            )
        self.nodes = self._get(refs, "starting")

    def _get(self, refs: list, what: str) -> list:
        """``ray.get`` of one ref a worker; a worker that died is a ``WorkerLost`` naming it."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayActorError as e:
            dead = next(w for w, r in enumerate(refs) if not self._alive(r))
            node = f" on node {self.nodes[dead]}" if self.nodes else ""
            cause = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise WorkerLost(f"rollout worker {dead + 1} of {len(refs)}{node} died {what}: {cause}") from None

    def _alive(self, ref) -> bool:
        try:
            self.ray.get(ref, timeout=0)
            return True
        except self.ray.exceptions.RayActorError:
            return False
        except self.ray.exceptions.GetTimeoutError:
            return True

    def launch(self, weights: dict, pool: dict[int, dict], iteration: int, teacher: str) -> Pending:
        """Start iteration ``iteration``'s rollout with ``weights`` (a CPU state dict) and
        the pool (snapshot id -> CPU state dict; each goes to the object store once)."""
        for sid in [s for s in self.snapshot_refs if s not in pool]:
            del self.snapshot_refs[sid]
        for sid, state in pool.items():
            if sid not in self.snapshot_refs:
                self.snapshot_refs[sid] = self.ray.put(state)
        w = self.ray.put(weights)
        refs = [a.collect.remote(w, dict(self.snapshot_refs), iteration, teacher) for a in self.actors]
        return Pending(iteration, refs)

    def gather(self, pending: Pending) -> Rollout:
        """The rollout ``pending`` stands for, its shares merged in worker order."""
        packed = self._get(pending.refs, f"in iteration {pending.iteration}")
        self.wire["bytes"] += sum(wire_bytes(p) for p in packed)
        self.wire["transitions"] += sum(len(p["actions"]) for p in packed)
        return merge([unpack(p) for p in packed])

    def describe(self) -> dict[str, Any]:
        """The workers as a run's summary tells them: how many, their nodes, and the bytes
        a transition cost on the wire so far."""
        per = self.wire["bytes"] / self.wire["transitions"] if self.wire["transitions"] else 0.0
        return {"count": len(self.actors), "nodes": list(self.nodes), "wire_bytes_per_transition": per}

    def close(self) -> None:
        """End the workers, and Ray if this group started it."""
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False
