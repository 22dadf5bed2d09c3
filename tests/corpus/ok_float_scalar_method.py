# expect: clean
# class: correct kernel calling a method on a float argument (an fp32 scalar when compiled)
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * s.to(tl.float32), mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), 2.5, BLOCK=256)
    return out


def ref(x):
    return x * 2.5


def make_inputs():
    return [torch.randn(N)]
