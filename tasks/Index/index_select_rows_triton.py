# kernel-lsp: reference=index_select_rows.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gather_rows_kernel(table_ptr, idx_ptr, out_ptr, dim, st_r, st_c, BLOCK: tl.constexpr):
    """out[i, :] = table[idx[i], :]; program (i, j) copies one BLOCK-wide slice of row i."""
    i = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    src = tl.load(idx_ptr + i)
    vals = tl.load(table_ptr + src * st_r + cols * st_c, mask=cols < dim)
    tl.store(out_ptr + i * dim + cols, vals, mask=cols < dim)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        n = idx.shape[0]
        dim = table.shape[1]
        out = torch.empty((n, dim), dtype=table.dtype, device=table.device)
        block = min(1024, triton.next_power_of_2(dim))
        _gather_rows_kernel[(n, triton.cdiv(dim, block))](table, idx.contiguous(), out, dim, table.stride(0),
                                                        table.stride(1), BLOCK=block)
        return out
