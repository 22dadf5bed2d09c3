# expect: clean
# class: a launcher that picks another block for very large inputs: correct, but that launch never runs at the
# verification's sizes, which is said (KL104, information, on its line) rather than passed over
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n >= 1 << 24:  # very large inputs: bigger blocks
        _scale_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096)
    else:
        _scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def ref(x):
    return x * 2.0


def make_inputs():
    return [torch.randn(N)]
