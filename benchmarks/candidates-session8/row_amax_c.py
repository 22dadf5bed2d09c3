# kernel-lsp: reference=../../tasks/Reduce/row_amax.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS, BLOCK_CAP, WARPS, STAGES = 1, 4096, 8, 2


@triton.jit
def _row_amax_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """out[r] = max_c x[r, c], NaN-propagating, for ROWS rows per program."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    base = x_ptr + rows.to(tl.int64)[:, None] * stride_r
    acc = tl.full((ROWS, BLOCK), -float("inf"), tl.float32)
    has_nan = tl.zeros((ROWS, BLOCK), dtype=tl.int32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols[None, :] * stride_c, mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols),
                    other=-float("inf"))
        has_nan = has_nan | (x != x).to(tl.int32)
        acc = tl.maximum(acc, x)
    result = tl.max(acc, axis=1)
    result = tl.where(tl.max(has_nan, axis=1) > 0, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        _row_amax_kernel[(triton.cdiv(rows, ROWS),)](x, out, rows, cols, x.stride(0), x.stride(1), ROWS=ROWS,
                                                    BLOCK=min(BLOCK_CAP, triton.next_power_of_2(cols)),
                                                    num_warps=WARPS, num_stages=STAGES)
        return out
