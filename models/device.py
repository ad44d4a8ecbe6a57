"""Where the networks compute: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.

``resolve_device`` turns such a string into a ``torch.device`` that exists on this
machine: ``auto`` takes a CUDA GPU when one is present, else Apple's MPS when present,
else the CPU; a device that is not there is a ValueError naming the ones that are.
Training (``Args.device``) and policy agents (``make_agent(path, device=...)``,
``barbu eval --device``) read their device through it.

``one_thread`` is how an agent's network computes on the CPU: torch on one thread while
it loads or acts, the caller's thread count restored after (an agent never changes it).

>>> resolve_device("cpu")
device(type='cpu')
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from barbu_env.util.extras import needs

with needs("train", "barbu_models.device"):  # one line if the extra is missing
    import torch

#: What a device setting may say.
DEVICE_FORMS = "auto, cpu, cuda, cuda:N or mps"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """The devices of this machine, as ``resolve_device`` accepts them."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    if _mps_available():
        found.append("mps")
    return found


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """The ``torch.device`` for a device setting: ``auto`` (a CUDA GPU if present, else MPS
    if present, else the CPU), ``cpu``, ``cuda`` (the current GPU), ``cuda:N`` or ``mps``.
    A device this machine does not have, or a string that names none, is a ValueError
    listing what is available. ``cpu`` asks CUDA nothing; the other settings do, which
    starts the CUDA driver in this process (``torch.cuda.is_available``): worker processes
    forked after that cannot use the GPU themselves (they can use the CPU)."""
    text = str(name).strip().lower()
    if text in ("cpu", "cpu:0"):
        return torch.device("cpu")
    if text == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if _mps_available() else "cpu")
    here = available_devices()
    if text not in here:
        raise ValueError(f"device {name!r}: a device is {DEVICE_FORMS}, one this machine has ({', '.join(here)})")
    return torch.device(text)


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one CPU thread inside the block, the caller's count restored after.

    Agents load and act inside it (policy checkpoints, the belief network): their batches
    (one observation per game, or per decision searched) gain nothing from more threads,
    and work done on one thread starts no OpenMP thread pool, which a tournament's worker
    processes, forked after the agents are made, would otherwise wait on for ever. The
    process's own setting (a trainer's ``torch_threads``, a user's) is left as it was."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
