# expect: clean
# class: a kernel path the linked inputs do not take (information, not a warning)
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_fp32(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def _scale_fp16(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * 3.0).to(tl.float16), mask=mask)


def scale(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    kernel = _scale_fp16 if xc.dtype == torch.float16 else _scale_fp32
    kernel[(triton.cdiv(xc.numel(), 256),)](xc, out, xc.numel(), BLOCK=256)
    return out


def ref(x):
    return x * 3.0


def make_inputs():
    return [torch.randn(N)]
