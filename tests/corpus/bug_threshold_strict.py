# expect: KL200
# class: a comparison at equality (> for >=)
# kernel-lsp: entry=threshold reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 5000


@triton.jit
def _threshold_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0.5, -1.0, x), mask=mask)  # the reference keeps x only above 0.5 (x <= 0.5 -> -1)


def threshold(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _threshold_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    return torch.nn.functional.threshold(x, 0.5, -1.0)


def make_inputs():
    return [torch.randn(N)]
