# expect: KL200
# may-add: KL201
# (on a GPU the special variant's inf is lost with the carry: KL201)
# class: a row scan that drops the running total between column blocks (the loop must run twice on the CPU)
# kernel-lsp: entry=row_cumsum reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 8192


@triton.jit
def _row_cumsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * n_cols + cols, s, mask=mask)
        carry = 0.0  # the running total is dropped: every block restarts from zero


def row_cumsum(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _row_cumsum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
    return out


def ref(x):
    return torch.cumsum(x, dim=1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
