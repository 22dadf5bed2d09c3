# expect: KL200
# class: a fused GELU + dropout whose training mode launches with a constant seed: each call drops a fifth of the
# elements, scaled right, so one call's distribution is the reference's, but every call drops the same ones where
# nn.Dropout draws anew on every call
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gelu_dropout_kernel(x_ptr, out_ptr, n, seed, p, TRAINING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    if TRAINING:
        y = tl.where(tl.rand(seed, offs) >= p, y / (1.0 - p), 0.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        seed = 1234
        _gelu_dropout_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), seed, self.p,
                                                               TRAINING=self.training and self.p > 0, BLOCK=1024)
        return out
