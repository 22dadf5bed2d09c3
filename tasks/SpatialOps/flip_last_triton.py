# kernel-lsp: reference=flip_last.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK, WARPS = 512, 4


@triton.jit
def _flip_kernel(x_ptr, out_ptr, n, n_cols, sxr, sxc, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """out[r, c] = x[r, n_cols - 1 - c], over the output as one flat run of elements (a block may span rows)."""
    if WIDE:  # indices past 2**31: 64-bit arithmetic; otherwise 32-bit, whose divisions are cheaper
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    row = i // n_cols
    col = i % n_cols
    vals = tl.load(x_ptr + row * sxr + (n_cols - 1 - col) * sxc, mask=mask, eviction_policy="evict_last")
    tl.store(out_ptr + i, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r, c = x.shape
        out = torch.empty((r, c), dtype=x.dtype, device=x.device)
        n = r * c
        wide = max(n, 1 + sum((d - 1) * abs(s) for d, s in zip(x.shape, x.stride()))) >= 2**31
        _flip_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, c, x.stride(0), x.stride(1), BLOCK=BLOCK, WIDE=wide,
                                               num_warps=WARPS)
        return out
