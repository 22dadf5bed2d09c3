# expect: KL208
# class: an out-of-bounds read in a kernel that calls libdevice (once hidden behind the interpreter's failure)
# kernel-lsp: entry=shifted_tanh reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

N = 3000


@triton.jit
def _shifted_tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n + 1, other=0.0)  # reads one element past the end
    tl.store(out_ptr + offs, libdevice.tanh(x), mask=offs < n)


def shifted_tanh(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _shifted_tanh_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512)
    return out


def ref(x):
    return torch.tanh(x)


def make_inputs():
    return [torch.randn(N)]
