# kernel-lsp: reference=../../tasks/Reduce/row_sum.py
"""Candidate for tasks/Reduce/row_sum_triton.py (issue 12): the same row loop, with the column tile and the warps
per row picked by the autotuner on the device (each config is verified on its own by kernel-lsp); the task's
own choice, BLOCK=2048 with 8 warps, is the first config."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w)
             for b, w in ((2048, 8), (4096, 8), (4096, 16), (8192, 16), (1024, 4))],
    key=["n_cols"],
)
@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    """out[r] = sum_c x[r, c]; fp32 accumulation over BLOCK-wide column tiles."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        _row_sum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1))
        return out
