# expect: KL203
# class: a launch grid computed on the module's first call and kept, where no size variant is larger than the
# problem's own (16 x 1000: sizes beyond them exceed the interpreter's budget): the model first called at the smallest
# size run, then at the problem's own sizes, covers one block of them
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._grid = None

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if self._grid is None:  # launch geometry worked out once
            self._grid = (triton.cdiv(x.numel(), 1024),)
        _silu_kernel[self._grid](x, out, x.numel(), BLOCK=1024)
        return out
