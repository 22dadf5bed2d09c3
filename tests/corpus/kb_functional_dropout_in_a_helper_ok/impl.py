# expect: clean
# class: a fused GELU + dropout that drops only in training mode (a seed drawn from torch's generator), against a
# reference whose module-level helper calls F.dropout with the model's self.training: judged by the outputs'
# distribution, since the reference draws there, not element by element
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
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item()) if self.training else 0
        _gelu_dropout_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), seed, self.p,
                                                               TRAINING=self.training and self.p > 0, BLOCK=1024)
        return out
