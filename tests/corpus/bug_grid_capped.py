# expect: KL200
# class: a grid capped at 64 programs of 256: wrong past 16384 elements, beyond the sizes the verifier runs
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    programs = min(triton.cdiv(x.numel(), 256), 64)
    _relu_kernel[(programs,)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
