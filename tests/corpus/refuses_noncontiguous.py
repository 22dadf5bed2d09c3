# expect: KL209:warning
# class: a loud refusal of non-contiguous input (a warning)
# kernel-lsp: entry=add reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y):
    assert x.is_contiguous() and y.is_contiguous(), "contiguous inputs only"
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def ref(x, y):
    return x + y


def make_inputs():
    return [torch.randn(N), torch.randn(N)]
