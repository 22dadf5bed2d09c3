# expect: KL201
# class: softmax overflow on large logits
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 32, 200


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, x_col_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols * x_col_stride, mask=mask, other=-float("inf"))
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


def softmax(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax_kernel[(m,)](x, out, n, x.stride(0), x.stride(1), out.stride(0), BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(M, N)]
