# kernel-lsp: reference=dropout.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

P = 0.1


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    """out[i] = x[i] / (1 - p) if rand(seed, i) >= p else 0, with Triton's counter-based Philox generator, so
    the same seed and index always give the same decision."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        n = xc.numel()
        _dropout_kernel[(triton.cdiv(n, 1024),)](xc, out, n, int(seed), P, BLOCK=1024)
        return out
