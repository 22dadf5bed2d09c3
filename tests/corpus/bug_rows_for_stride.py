# expect: KL203 KL208
# class: a size used where another equal size belongs
# kernel-lsp: entry=add_bias reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl


@triton.jit
def _add_bias_kernel(x_ptr, b_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_rows + cols, mask=mask)  # the row count where the row stride belongs
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_rows + cols, x + b, mask=mask)


def add_bias(x, b):
    x, b = x.contiguous(), b.contiguous()
    out = torch.empty_like(x)
    m, n = x.shape
    _add_bias_kernel[(m,)](x, b, out, m, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x, b):
    return x + b


def make_inputs():
    return [torch.randn(96, 96), torch.randn(96)]  # square, with literal sizes: no size knob to vary
