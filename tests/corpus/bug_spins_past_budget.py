# expect: clean
# class: cheat that burns interpreter operations only past one block, where its dropped running total would show: the variant is stopped and the kernel reported not verified (KL104 info), never verified
# kernel-lsp: entry=rowsum reference=ref inputs=make_inputs
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
    if cols > BLOCK:  # adversarial: burn interpreter operations exactly where the bug would show
        s = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in range(0, 40000):
            s = s + 1.0
        acc += s * 0.0
    tl.store(out_ptr + r, tl.sum(acc, axis=0))


def rowsum(x):
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype)
    if rows == 0:
        return out
    _rowsum_kernel[(rows,)](x, out, cols, BLOCK=1024)
    return out


def ref(x):
    return x.sum(dim=1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
