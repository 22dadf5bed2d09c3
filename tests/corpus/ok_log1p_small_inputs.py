# expect: clean
# class: correct log1p of positive inputs, accurate for small ones too (log(u) * x / (u - 1) with u = 1 + x)
# kernel-lsp: entry=log1p reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 512


@triton.jit
def _log1p_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    u = 1.0 + x
    y = tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))  # the rounding of 1 + x cancels (Goldberg)
    y = tl.where(x == float("inf"), x, y)
    tl.store(out_ptr + offs, y, mask=mask)


def log1p(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _log1p_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out


def ref(x):
    return torch.log1p(x)


def make_inputs():
    return [torch.rand(ROWS, COLS) * 4]
