# expect: KL200
# class: the fast path that only aligned sizes take is wrong (the CPU's odd sizes take the other path)
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1 << 20
BLOCK = 1024
SCALE = 3.0


@triton.jit
def _scale_whole_blocks(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)  # a copy of an older version: the scale was 2 then


@triton.jit
def _scale_masked(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n % BLOCK == 0:
        _scale_whole_blocks[(n // BLOCK,)](x, out, BLOCK=BLOCK)
    else:
        _scale_masked[(triton.cdiv(n, BLOCK),)](x, out, n, SCALE, BLOCK=BLOCK)
    return out


def ref(x):
    return x * SCALE


def make_inputs():
    return [torch.randn(N)]
