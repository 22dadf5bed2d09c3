"""A player's first Triton launch, made before the checker's first request (player/main.py, on a GPU).

A kernel's first launch in a fresh process pays for more than the kernel: Triton's compiler front end, its backend,
the cache lookups and the launcher machinery. The player makes one launch of its own kernel (an elementwise copy, the
most common signature) before it says ready, so that a check's first call pays only for its own kernel. Imports
nothing but torch and Triton.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def warm(device: str) -> None:
    """One launch on `device`, synchronised; anything it raises is left for the first real launch to meet."""
    import torch
    try:
        x = torch.arange(256, dtype=torch.float32, device=device)
        out = torch.empty_like(x)
        _warm_kernel[(2,)](x, out, x.numel(), BLOCK=128)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001
        pass
