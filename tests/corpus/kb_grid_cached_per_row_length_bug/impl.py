# expect: KL203 KL208
# class: a launch grid cached per row length, though it depends on the batch size too: a later call with rows of
# the same length and more of them runs too few programs and leaves the last rows unwritten (every call at one size
# is right, and so is a second call where every size changes)
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._launch = {}  # row length -> (grid, block), worked out once per row length

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        if cols not in self._launch:
            self._launch[cols] = ((rows,), triton.next_power_of_2(cols))
        grid, block = self._launch[cols]
        _softmax_kernel[grid](x, out, cols, x.stride(0), BLOCK=block)
        return out
