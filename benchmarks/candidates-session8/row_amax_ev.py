# kernel-lsp: reference=../../tasks/Reduce/row_amax.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_CAP, WARPS, STAGES = 2048, 8, 4


@triton.jit
def _row_amax_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    """out[r] = max_c x[r, c], NaN-propagating: a NaN anywhere in the row makes the result NaN."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    has_nan = tl.zeros((BLOCK,), dtype=tl.int32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=cols < n_cols, other=-float("inf"), eviction_policy="evict_first")
        has_nan = has_nan | (x != x).to(tl.int32)
        acc = tl.maximum(acc, x)
    result = tl.max(acc, axis=0)
    result = tl.where(tl.max(has_nan, axis=0) > 0, float("nan"), result)
    tl.store(out_ptr + row, result)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        _row_amax_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=min(BLOCK_CAP, triton.next_power_of_2(cols)), num_warps=WARPS, num_stages=STAGES)
        return out
