# expect: clean
# class: correct column sums with atomics
# kernel-lsp: entry=col_sum reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 64, 100


@triton.jit
def _col_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_row, stride_col, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col, mask=mask, other=0.0)
    tl.atomic_add(out_ptr + cols, tl.sum(x, axis=0), mask=cols < n_cols)


def col_sum(x):
    m, n = x.shape
    out = torch.zeros((n,), dtype=torch.float32, device=x.device)
    _col_sum_kernel[(triton.cdiv(m, 16),)](x, out, m, n, x.stride(0), x.stride(1), ROWS=16, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return x.sum(dim=0)


def make_inputs():
    return [torch.randn(M, N)]
