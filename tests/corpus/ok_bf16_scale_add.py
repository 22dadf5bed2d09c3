# expect: clean
# class: correct bf16 fused multiply-add with fp32 math
# kernel-lsp: entry=fma reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000


@triton.jit
def _fma_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha + y).to(tl.bfloat16), mask=mask)


def fma(x, y):
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    _fma_kernel[(triton.cdiv(x.numel(), 512),)](x, y, out, x.numel(), 1.5, BLOCK=512)
    return out


def ref(x, y):
    return x * 1.5 + y


def make_inputs():
    return [torch.randn(N).bfloat16(), torch.randn(N).bfloat16()]
