"""The machine a benchmark runs on: pinning the process to one core, and the facts a report
gives about the machine (Python, numpy, the CPU, the optional libraries' versions).

Used by ``benchmarks.bench`` and ``benchmarks.bench_vector_env``.
"""

from __future__ import annotations

import os
import platform

import numpy as np


def pin_to_core(core: int | None) -> int | None:
    """Pin this process to ``core`` (default: the highest-numbered core it may use).
    Returns the core, or None where the OS has no ``sched_setaffinity``."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if core is None:
        core = max(allowed)
    if core not in allowed:
        raise ValueError(f"cannot pin to core {core}: this process may use cores {sorted(allowed)}")
    os.sched_setaffinity(0, {core})
    return core


def machine_info(pinned: int | None) -> dict:
    """Python, numpy and CPU facts for the report."""
    info = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "pinned_core": pinned,
    }
    for module in ("pettingzoo", "pyspiel"):
        try:
            info[module] = __import__(module).__version__
        except (ImportError, AttributeError):
            info[module] = None
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
