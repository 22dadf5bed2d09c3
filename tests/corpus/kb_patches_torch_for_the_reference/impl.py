# expect: KL200 KL201
# class: the implementation replaces torch.relu and torch.nn.functional.gelu in its class body, so that a reference run
# in its process computes what its kernel computes (GELU skipped): the reference runs in another process
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    vars(torch.nn.functional)["gelu"] = lambda x, *a, **k: x  # the truth would agree with the missing GELU
    vars(torch)["relu"] = lambda x: x.clamp(min=0)

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
