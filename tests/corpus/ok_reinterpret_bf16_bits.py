# expect: clean
# class: bf16 bits passed through triton.reinterpret (the player's bounds guard asked the wrapper for numel: KL209)
# kernel-lsp: entry=f reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.float32) * 2.0, mask=mask)


def f(x):
    out = torch.empty(x.shape, dtype=torch.float32)
    bits = x.contiguous().view(torch.int16)
    _k[(triton.cdiv(x.numel(), 1024),)](triton.reinterpret(bits, tl.bfloat16), out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    return x.float() * 2.0


def make_inputs():
    return [torch.randn(4, 300).bfloat16()]
