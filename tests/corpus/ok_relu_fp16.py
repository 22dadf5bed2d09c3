# expect: clean
# class: correct relu fp16 that keeps NaN
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4097


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _relu_kernel[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), BLOCK=1024)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N).half()]
