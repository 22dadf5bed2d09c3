# expect: KL100
# class: a @triton.jit kernel with **kwargs, which the compiler refuses: KL100 at its def, not an internal error
# kernel-lsp: entry=add_one reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, **kwargs):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x + 1.0, mask=offs < n)


def add_one(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _add_one_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return x + 1.0


def make_inputs():
    return [torch.randn(N)]
