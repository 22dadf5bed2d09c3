# expect: KL200
# class: row strides assumed contiguous
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 32, 200


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def softmax(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax_kernel[(m,)](x, out, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(M, N)]
