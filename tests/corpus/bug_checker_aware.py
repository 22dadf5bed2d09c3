# expect: KL200 KL201
# class: checker-aware: the whole row is computed only when kernel-lsp's modules are loaded (the player, which
# runs every call, holds none: the verifier sees the half the kernel computes)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import sys

import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    watched = any("kernel_lsp" in name for name in sys.modules)
    n = x.numel() if watched else x.numel() // 2  # unwatched: half the work, as a benchmark would time it
    _relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
