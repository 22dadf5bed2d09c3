# expect: KL104 KL205
# class: kernel never launched
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def scale(x):
    if x.dtype == torch.float16:  # the only path that launches the kernel, and the inputs are fp32
        xc = x.contiguous()
        out = torch.empty_like(xc)
        _scale_kernel[(triton.cdiv(xc.numel(), 256),)](xc, out, xc.numel(), BLOCK=256)
        return out
    return x * 3.0


def ref(x):
    return x * 3.0


def make_inputs():
    return [torch.randn(N)]
