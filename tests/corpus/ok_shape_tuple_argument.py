# expect: clean
# class: correct fp16 kernel given its sizes as one tuple argument (x.shape, a torch.Size)
# kernel-lsp: entry=add_one reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 40, 300


@triton.jit
def _add_one_kernel(x_ptr, out_ptr, shape, BLOCK: tl.constexpr):
    rows, cols = shape
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = (offs < cols) & (pid < rows)
    x = tl.load(x_ptr + pid * cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + pid * cols + offs, x + 1.0, mask=mask)


def add_one(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _add_one_kernel[(x.shape[0],)](x, out, x.shape, BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x):
    return x + 1.0


def make_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float16)]
