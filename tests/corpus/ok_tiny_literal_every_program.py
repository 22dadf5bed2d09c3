# expect: clean
# class: correct elementwise kernel on a literal tiny input (every program stores its block)
# kernel-lsp: entry=scale_shift reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, 2.0 * x + 1.0, mask=mask)


def scale_shift(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _scale_shift_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def ref(x):
    return 2.0 * x + 1.0


def make_inputs():
    return [torch.randn(6, 5)]
