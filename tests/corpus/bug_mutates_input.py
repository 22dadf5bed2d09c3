# expect: KL204
# class: input mutated
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * 3.0, mask=mask)


def scale(x):
    y = x.contiguous()
    _scale_kernel[(triton.cdiv(y.numel(), 256),)](y, y.numel(), BLOCK=256)
    return y


def ref(x):
    return x * 3.0


def make_inputs():
    return [torch.randn(N)]
