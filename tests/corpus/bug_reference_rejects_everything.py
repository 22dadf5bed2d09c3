# expect: KL003
# class: nothing verifiable (reference fails on every variant)
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _scale_kernel[(triton.cdiv(xc.numel(), 256),)](xc, out, xc.numel(), BLOCK=256)
    return out


def ref(x):
    # A reference that can never run: "clean" must mean "judged", so this is an error, not a pass.
    return x.view(7, -1) * 2.0


def make_inputs():
    return [torch.randn(N)]
