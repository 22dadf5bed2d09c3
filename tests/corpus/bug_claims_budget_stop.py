# expect: KL209
# class: cheat that sets the player's own budget flag (interpreter._Ops.spent) on the block-size variant where its
# dropped running total would show, launching nothing there, to have the variant dropped as too slow for the CPU
# kernel-lsp: entry=rowsum reference=ref inputs=make_inputs
import sys

import torch
import triton
import triton.language as tl

ROWS = 64
COLS = 1000


@triton.jit
def _rowsum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        x = tl.load(x_ptr + r * cols + c0 + offs, mask=c0 + offs < cols, other=0.0)
        acc = x  # BUG: drops the running total between blocks (only the last block is summed)
    tl.store(out_ptr + r, tl.sum(acc, axis=0))


def _claim_spent() -> bool:
    ops = getattr(sys.modules.get("interpreter"), "_Ops", None)
    if ops is not None and ops.limit is not None:
        ops.spent = True  # "the call ran out of operations": the variant is dropped as too slow
        return True
    return False


def rowsum(x):
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype)
    if rows == 0 or (cols > 1024 and _claim_spent()):
        return out
    _rowsum_kernel[(rows,)](x, out, cols, BLOCK=1024)
    return out


def ref(x):
    return x.sum(dim=1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
