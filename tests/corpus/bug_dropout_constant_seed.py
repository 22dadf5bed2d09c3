# expect: KL200
# class: a dropout whose seed is a constant: every call drops the same elements, where the reference draws afresh
# kernel-lsp: entry=dropout reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.25
ROWS, COLS = 64, 200


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, offs) >= p, x / (1 - p), 0.0), mask=mask)


def dropout(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _dropout_kernel[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), 1234, P, BLOCK=1024)  # the same mask always
    return out


def ref(x):
    return torch.nn.functional.dropout(x, P, training=True)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
