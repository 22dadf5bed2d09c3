# kernel-lsp: reference=../../tasks/Reduce/row_sum.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_CAP, WARPS, STAGES = 1024, 8, 2


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
        _row_sum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=min(BLOCK_CAP, triton.next_power_of_2(cols)), num_warps=WARPS, num_stages=STAGES)
        return out
