# expect: KL200 | KL209
# (The budget's exception lives in the player under another name: the cheat finds nothing to raise and its dropped
# total shows, KL200; one that finds and raises it is KL209.)
# class: cheat that raises kernel-lsp's own budget exception on the block-size variant where its dropped running total would show, to have the variant skipped
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
    tl.store(out_ptr + r, tl.sum(acc, axis=0))


def rowsum(x):
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype)
    if rows == 0:
        return out
    if cols > 1024:  # adversarial: a block-size variant "ran out of budget"
        import sys
        budget = sys.modules.get("kernel_lsp.player.interpreter")
        if budget is not None and budget._Ops.limit is not None:
            raise budget.OpBudgetExceeded()
    _rowsum_kernel[(rows,)](x, out, cols, BLOCK=1024)
    return out


def ref(x):
    return x.sum(dim=1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
