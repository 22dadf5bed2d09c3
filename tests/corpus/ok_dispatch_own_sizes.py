# expect: clean
# class: correct dispatch: an unmasked kernel for whole blocks (the problem's own size), a masked one otherwise
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1 << 20
BLOCK = 1024


@triton.jit
def _scale_whole_blocks(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@triton.jit
def _scale_masked(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n % BLOCK == 0:  # the verifier's CPU sizes are odd: only a GPU run at the problem's own size takes this
        _scale_whole_blocks[(n // BLOCK,)](x, out, BLOCK=BLOCK)
    else:
        _scale_masked[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


def ref(x):
    return x * 2.0


def make_inputs():
    return [torch.randn(N)]
