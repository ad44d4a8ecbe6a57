"""The arithmetic of the network's matrix products in training: float32 or bfloat16.

``precision: auto | float32 | bfloat16`` (a training field). With ``bfloat16`` the
forward passes of the rollouts and of the update run under ``torch.autocast``: the
matrix products take bfloat16 inputs and accumulate in float32, the weights, the
optimizer and the losses stay float32 (mixed precision, not a bfloat16 network). The
policy's logits and values come out as float32 before the masked distribution is built,
so log-probabilities, entropies and losses are computed in float32 either way.

``auto`` takes bfloat16 where the hardware multiplies it natively — a CUDA device that
supports it, or a CPU with AVX-512 BF16 or AMX — and float32 elsewhere (bfloat16
emulated on an older CPU is slower than float32). What it buys, measured with
``python -m experiments.bench_training --compare precision=float32,bfloat16``: docs/benchmarks.md.

The rollout and the update use the same precision, so the log-probabilities stored
with the rollout are the ones the first minibatch of the update recomputes (up to the
rounding of the matrix products' blocking): the PPO ratio starts at 1.
"""

from __future__ import annotations

import contextlib

from barbu_env.util.extras import needs

with needs("train", "barbu_training.precision"):  # one line if the extra is missing
    import torch


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices natively (faster than float32)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu's own probes
        return any(getattr(torch.cpu, name, lambda: False)() for name in checks)
    return False


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> torch.dtype:
    """The dtype of the matrix products for a ``precision`` field on ``device``."""
    device = torch.device(device)
    if precision == "auto":
        return torch.bfloat16 if native_bfloat16(device) else torch.float32
    return torch.bfloat16 if precision == "bfloat16" else torch.float32


def autocast(dtype: torch.dtype, device: torch.device | str = "cpu") -> contextlib.AbstractContextManager:
    """A context running the network's forward pass in ``dtype`` (nothing for float32)."""
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)
