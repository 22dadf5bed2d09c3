# expect: clean
# class: a torch RReLU kept in the model: random while training (as built), which the reference is too; no norm,
# dropout or code of its own said so
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.act = nn.RReLU()
        self.scale = scale

    def forward(self, x):
        y = self.act(x).contiguous()
        out = torch.empty_like(y)
        _scale_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), float(self.scale), BLOCK=1024)
        return out
