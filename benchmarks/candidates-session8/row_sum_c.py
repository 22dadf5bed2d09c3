# kernel-lsp: reference=../../tasks/Reduce/row_sum.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS, BLOCK_CAP, WARPS, STAGES = 1, 4096, 8, 2


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """out[r] = sum_c x[r, c] for ROWS rows per program; fp32 accumulation over BLOCK-wide column tiles."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    base = x_ptr + rows.to(tl.int64)[:, None] * stride_r
    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols[None, :] * stride_c, mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols),
                    other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty), mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        _row_sum_kernel[(triton.cdiv(rows, ROWS),)](x, out, rows, cols, x.stride(0), x.stride(1), ROWS=ROWS,
                                                   BLOCK=min(BLOCK_CAP, triton.next_power_of_2(cols)),
                                                   num_warps=WARPS, num_stages=STAGES)
        return out
