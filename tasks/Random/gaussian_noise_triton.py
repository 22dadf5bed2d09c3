# kernel-lsp: reference=gaussian_noise.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

SIGMA = 0.5
BLOCK, WARPS = 2048, 4


@triton.jit
def _noise_kernel(x_ptr, out_ptr, n, seed, sigma, BLOCK: tl.constexpr):
    """out[i] = x[i] + sigma * z, z standard normal: each Philox call gives four normals (tl.randn4x), for four
    neighbouring elements, a quarter of the generator's work of one tl.randn per element."""
    pid = tl.program_id(0)
    z0, z1, z2, z3 = tl.randn4x(seed, pid * (BLOCK // 4) + tl.arange(0, BLOCK // 4))
    z = tl.reshape(tl.join(tl.join(z0, z1), tl.join(z2, z3)), (BLOCK,))
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + sigma * z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        n = xc.numel()
        _noise_kernel[(triton.cdiv(n, BLOCK),)](xc, out, n, int(seed), SIGMA, BLOCK=BLOCK, num_warps=WARPS)
        return out
