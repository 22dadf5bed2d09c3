# expect: KL200
# class: a softmax whose path for rows longer than its largest block (2048) never rescales its running sum: right on
# the short rows the CPU's shrunk sizes give it (one block a row, sized to the row), wrong at the problem's own length
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 4096


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * n_cols
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m_new), axis=0)  # the sum so far is not rescaled by exp(m - m_new)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf"))
        tl.store(out_ptr + row * n_cols + cols, tl.exp(x - m) / s, mask=cols < n_cols)


def softmax(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(x.shape[1]), 2048)  # a row in one block, up to 2048 columns
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=block)
    return out


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
