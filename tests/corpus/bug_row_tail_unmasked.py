# expect: KL208
# class: missing tail mask
# kernel-lsp: entry=row_scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 100, 64


@triton.jit
def _row_scale_kernel(x_ptr, s_ptr, out_ptr, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = cols[None, :] < n_cols
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    s = tl.load(s_ptr + rows)
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], x * s[:, None], mask=mask)


def row_scale(x, s):
    x, s = x.contiguous(), s.contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    _row_scale_kernel[(triton.cdiv(m, 16),)](x, s, out, m, n, BM=16, BN=triton.next_power_of_2(n))
    return out


def ref(x, s):
    return x * s[:, None]


def make_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS)]
