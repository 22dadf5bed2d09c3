# expect: clean
# class: correct: a zero-initialized output whose lower triangle the kernel writes (the upper stays zero)
# kernel-lsp: entry=tril_scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M = 67


@triton.jit
def _tril_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < n) & (cols <= row)
    x = tl.load(x_ptr + row * n + cols, mask=mask)
    tl.store(out_ptr + row * n + cols, x * 2.0, mask=mask)


def tril_scale(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    n = x.shape[1]
    _tril_scale[(x.shape[0],)](x, out, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return torch.tril(x) * 2.0


def make_inputs():
    return [torch.randn(M, M)]
