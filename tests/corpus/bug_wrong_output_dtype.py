# expect: KL202
# class: wrong output dtype
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x * 0.5, mask=mask)


def scale(x):
    xc = x.contiguous()
    out = torch.empty(xc.shape, dtype=torch.float32, device=xc.device)
    _scale_kernel[(triton.cdiv(xc.numel(), 256),)](xc, out, xc.numel(), BLOCK=256)
    return out


def ref(x):
    return x * 0.5


def make_inputs():
    return [torch.randn(N).half()]
