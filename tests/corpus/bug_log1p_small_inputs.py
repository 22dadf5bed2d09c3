# expect: KL200:error
# class: log1p computed as log(1 + x) loses relative precision for small positive inputs (PyTorch is exact there)
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
    tl.store(out_ptr + offs, tl.log(1.0 + x), mask=mask)  # 1 + x rounds away the digits of a small x


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
