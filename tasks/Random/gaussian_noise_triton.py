# kernel-lsp: reference=gaussian_noise.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

SIGMA = 0.5


@triton.jit
def _noise_kernel(x_ptr, out_ptr, n, seed, sigma, BLOCK: tl.constexpr):
    """out[i] = x[i] + sigma * randn(seed, i) (Philox-based normal samples)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + sigma * tl.randn(seed, offs), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        n = xc.numel()
        _noise_kernel[(triton.cdiv(n, 1024),)](xc, out, n, int(seed), SIGMA, BLOCK=1024)
        return out
