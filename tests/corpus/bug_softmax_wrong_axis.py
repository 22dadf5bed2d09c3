# expect: KL201
# class: a row softmax that sums its exponentials down the columns (`axis=0` for `axis=1`): every finite element is
# wrong, and the block holding the padded rows is NaN, so the finding must say both
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 100, 50


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=1)[:, None])
    den = tl.sum(num, axis=0)  # the wrong axis: down the columns of the block
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], num / den[None, :], mask=mask)


def softmax(x):
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    _softmax_kernel[(triton.cdiv(m, 8),)](x, out, m, n, ROWS=8, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(M, N)]
