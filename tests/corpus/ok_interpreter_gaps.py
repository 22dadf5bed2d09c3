# expect: clean
# class: correct kernel written in ways the compiler accepts and Triton's CPU interpreter once rejected
# kernel-lsp: entry=gelu_rows reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

ROWS, COLS = 48, 300
ROW_LIMIT = tl.constexpr(1 << 30)  # offsets are int32: rows past this would wrap


@triton.jit
def _gelu_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: "tl.constexpr"):
    # A string annotation, a mask built from the program id and a constant, and a libdevice call.
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (pid < ROW_LIMIT) & (pid < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + pid * n_cols + cols, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(out_ptr + pid * n_cols + cols, y, mask=mask)


def gelu_rows(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    _gelu_rows_kernel[lambda meta: [rows]](x, out, rows, cols, BLOCK=block)  # a grid callable returning a list
    return out


def ref(x):
    return torch.nn.functional.gelu(x)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
