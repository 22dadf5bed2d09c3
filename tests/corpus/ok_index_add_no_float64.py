# expect: clean
# class: correct kernel whose reference cannot run in float64 (its own explicit fp32 buffer)
# kernel-lsp: entry=scatter_rows reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N, D, ROWS = 400, 48, 16


@triton.jit
def _scatter_rows_kernel(x_ptr, idx_ptr, out_ptr, n, d, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        rows = start + tl.arange(0, BLOCK_N)
        take = (tl.load(idx_ptr + rows, mask=rows < n, other=-1) == row)
        x = tl.load(x_ptr + rows[:, None] * d + cols[None, :], mask=take[:, None] & (cols[None, :] < d), other=0.0)
        acc += tl.sum(x, axis=0)  # a tree sum: another order than index_add_'s
    tl.store(out_ptr + row * d + cols, acc, mask=cols < d)


def scatter_rows(x, idx):
    x = x.contiguous()
    out = torch.empty(ROWS, x.shape[1], dtype=x.dtype, device=x.device)
    _scatter_rows_kernel[(ROWS,)](x, idx.contiguous(), out, x.shape[0], x.shape[1], BLOCK_N=64,
                                  BLOCK_D=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x, idx):
    out = torch.zeros(ROWS, x.shape[1], dtype=torch.float32, device=x.device)  # fp32 whatever x is
    return out.index_add_(0, idx, x)


def make_inputs():
    return [torch.randn(N, D), torch.randint(0, ROWS, (N,))]
