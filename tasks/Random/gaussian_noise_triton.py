# kernel-lsp: reference=gaussian_noise.py
"""gaussian_noise with Box-Muller on the GPU's fast special-function unit (`sin.approx`, `cos.approx`, `lg2.approx`
through libdevice's fast_ functions) instead of the accurate libdevice sin, cos and log that `tl.randn4x` calls,
which bound the kernel by arithmetic (156 us on the H200; 129 us with the fast functions, at the copy rate). The
angle is taken in [-pi, pi), where the fast functions are most accurate (about 2^-21 absolute); a normal's
distribution is the same either way. FAST = False takes `tl.randn4x` (benchmarks/cand16)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

SIGMA = 0.5
BLOCK, WARPS, FAST = 1024, 4, True


@triton.jit
def _fast_normal_pair(u1, u2):
    """Box-Muller on the fast special functions: two independent standard normals from two uniforms in [0, 1)."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * (u2 - 0.5)
    r = tl.sqrt(-2.0 * libdevice.fast_logf(u1))
    return r * libdevice.fast_cosf(th), r * libdevice.fast_sinf(th)


@triton.jit
def _noise_kernel(x_ptr, out_ptr, n, seed, sigma, BLOCK: tl.constexpr, FAST: tl.constexpr):
    """out[i] = x[i] + sigma * z, z standard normal: each Philox call gives four normals, for four neighbouring
    elements."""
    pid = tl.program_id(0)
    if FAST:
        u0, u1, u2, u3 = tl.rand4x(seed, pid * (BLOCK // 4) + tl.arange(0, BLOCK // 4))
        z0, z1 = _fast_normal_pair(u0, u1)
        z2, z3 = _fast_normal_pair(u2, u3)
    else:
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
        _noise_kernel[(triton.cdiv(n, BLOCK),)](xc, out, n, int(seed), SIGMA, BLOCK=BLOCK, FAST=FAST,
                                                num_warps=WARPS)
        return out
