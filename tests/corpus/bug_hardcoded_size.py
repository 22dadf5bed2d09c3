# expect: KL203 KL208
# may-add: KL204
# class: hard-coded shape
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1024


@triton.jit
def _scale_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < 1024) * 3.0, mask=offs < 1024)


def scale(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _scale_kernel[(4,)](xc, out, BLOCK=256)
    return out


def ref(x):
    return x * 3.0


def make_inputs():
    return [torch.randn(N)]
