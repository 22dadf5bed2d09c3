# expect: clean
# class: a constexpr branch (an unmasked path for sizes that are whole blocks) that no launch selects: said as not
# verified (information on the branch's line), not a warning
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3.0)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def scale(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    n = xc.numel()
    _scale_kernel[(triton.cdiv(n, 4096),)](xc, out, n, EVEN=n % 4096 == 0, BLOCK=4096)
    return out


def ref(x):
    return x * 3.0


def make_inputs():
    return [torch.randn(N)]
