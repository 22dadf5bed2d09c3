# expect: clean
# class: correct persistent kernel (a few programs walk every row): its block-size variant over many rows, too slow for the CPU interpreter, is stopped and the kernel reported not verified (KL104 info), not run into the timeout
# kernel-lsp: entry=polyval reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS = 64
COLS = 1000
DEGREE = 96
PROGRAMS = 4


@triton.jit
def _polyval_kernel(x_ptr, c_ptr, out_ptr, rows, cols, degree, programs, BLOCK: tl.constexpr):
    """out[r, :] = c[0] x^(degree-1) + ... + c[degree-1] by Horner's rule; `programs` programs walk the rows."""
    offs = tl.arange(0, BLOCK)
    for r in range(tl.program_id(0), rows, programs):
        for c0 in range(0, cols, BLOCK):
            mask = c0 + offs < cols
            x = tl.load(x_ptr + r * cols + c0 + offs, mask=mask, other=0.0)
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for k in range(0, degree):
                acc = acc * x + tl.load(c_ptr + k)
            tl.store(out_ptr + r * cols + c0 + offs, acc, mask=mask)


def polyval(x, c):
    x, c = x.contiguous(), c.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    if out.numel() == 0:
        return out
    programs = min(PROGRAMS, rows)
    _polyval_kernel[(programs,)](x, c, out, rows, cols, c.numel(), programs, BLOCK=1024)
    return out


def ref(x, c):
    acc = torch.zeros_like(x)
    for k in range(c.numel()):
        acc = acc * x + c[k]
    return acc


def make_inputs():
    return [torch.rand(ROWS, COLS) * 2 - 1, torch.randn(DEGREE) / DEGREE]
