"""Bit and random-stream helpers shared by the numba kernels (``_kernels``, ``worlds``,
``agents._heuristic_kernels``), and the one way they are compiled: ``kernel``.

Card sets (and seat sets, action sets) are uint64; every constant mixed with them is an
``np.uint64`` (numba, like numpy, turns ``uint64 op int64`` into float64). ``popcount``,
``lowest`` and ``highest`` are LLVM's ``ctpop``, ``cttz`` and ``ctlz``: single
instructions on current CPUs.

Random streams are splitmix64 (Steele et al. 2014): the caller keeps the 64-bit state and
advances it by ``SPLITMIX_GAMMA``; ``splitmix64`` mixes the advanced state into the output.
The two users draw below n in two ways, each exactly uniform and kept for good (another
would change every seeded deal or sampled world): the batched engine's deals with Lemire's
multiply-shift (``_kernels._below``, n < 2**32), the world sampler with masked rejection
(``worlds._below``, n < 2**63: its counts reach 8.5e16).

The disk cache (``refresh_stale_cache``): numba's cache notices a change to a kernel module's
own file, not to the constants it reads from other modules (the observation layout, the
action ids) and freezes into its compiled code. Each kernel module therefore compiles a
``probe`` kernel returning those constants and calls ``refresh_stale_cache`` on import: if
the cached probe disagrees with the current constants, every kernel of the module has its
cache dropped and compiles afresh on its next call. No user ever deletes a cache by hand.

>>> from barbu_env.game._bits import popcount, lowest, highest
>>> import numpy as np
>>> popcount(np.uint64(0b1011)), lowest(np.uint64(0b1000)), highest(np.uint64(0b1011))
(3, 3, 3)
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from numba import njit
from numba.core import types
from numba.core.caching import FunctionCache, NullCache
from numba.core.extending import intrinsic
from numba.core.registry import CPUDispatcher
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros


class CacheWarning(RuntimeWarning):
    """numba's disk cache of the kernels could not be read or written: they compile in memory."""


class _KernelCache(FunctionCache):
    """numba's disk cache of one kernel (what ``njit(cache=True)`` gives it), where a cache
    file that cannot be read or written (a full disk, a quota, a read-only copy) is not an
    error: the kernel is compiled in memory as if it had no cache, and a ``CacheWarning``
    says so, once in a process. (numba's own guard, the method overridden here, forgives
    one error on Windows.)"""

    #: Whether this process has warned already (one warning, however many kernels).
    warned = False

    @contextlib.contextmanager
    def _guard_against_spurious_io_errors(self):
        try:
            yield
        except OSError as e:
            _uncached(e.strerror or str(e))


def _uncached(why: str) -> None:
    """Say, once in a process, that the kernels compile in memory (``CacheWarning``)."""
    if _KernelCache.warned:
        return
    _KernelCache.warned = True
    warnings.warn(
        f"numba could not read or write its cache of barbu's compiled kernels ({why}): "
        "they are compiled in memory, again in each new process",
        CacheWarning,
        stacklevel=3,
    )


_compile = njit(_nrt=False)


def kernel(fn):
    """``fn`` compiled as every kernel is: on first use, without reference counting
    (``_nrt=False``: the kernels allocate nothing, and per-call reference counts of array
    arguments would cost more than the rules), and cached on disk (``_KernelCache``: as
    ``njit(cache=True)`` caches, but a full disk costs time, not the call)."""
    compiled = _compile(fn)
    try:
        compiled._cache = _KernelCache(compiled.py_func)  # what Dispatcher.enable_caching sets
    except RuntimeError:  # no folder to cache in at all (numba: "no locator available")
        _uncached("no folder it may write to")
    return compiled


U0 = np.uint64(0)
U1 = np.uint64(1)
SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)


@intrinsic
def _ctpop(typingctx, x):
    """Population count (LLVM's ctpop)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@kernel
def bit(k):
    """The one-element set {k}."""
    return U1 << np.uint64(k)


@kernel
def popcount(x):
    """The number of elements of a set."""
    return np.int64(_ctpop(x))


@kernel
def lowest(x):
    """The lowest element of a set, -1 if empty."""
    if x == U0:
        return -1
    return np.int64(trailing_zeros(x))


@kernel
def highest(x):
    """The highest element of a set, -1 if empty."""
    return 63 - np.int64(leading_zeros(x))


@kernel
def splitmix64(z):
    """The splitmix64 output of the (already advanced) stream state ``z``."""
    z = (z ^ (z >> np.uint64(30))) * _SPLITMIX_M1
    z = (z ^ (z >> np.uint64(27))) * _SPLITMIX_M2
    return z ^ (z >> np.uint64(31))


def refresh_stale_cache(namespace: dict, probe, expected: tuple) -> None:
    """Drop the disk cache of every kernel in ``namespace`` (a kernel module's ``globals()``)
    if ``probe()`` (a kernel of that module returning the constants it freezes) is not
    ``expected``: then each compiles afresh on its next call. Raises ``RuntimeError`` only if
    a fresh compilation still disagrees (which would be a bug, not a stale cache)."""
    if tuple(probe()) == expected:
        return
    for value in list(namespace.values()):
        if isinstance(value, CPUDispatcher) and value.py_func.__module__ == namespace["__name__"]:
            try:
                value._cache.flush()
            except OSError:  # a stale cache that cannot be dropped is not read: compiled in memory
                value._cache = NullCache()
    probe.recompile()
    if tuple(probe()) != expected:
        raise RuntimeError(f"{namespace['__name__']}: a fresh compilation disagrees with the module's constants")
