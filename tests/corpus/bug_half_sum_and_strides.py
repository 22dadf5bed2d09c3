# expect: KL200
# class: two causes at one store: an fp16 round trip (every input) and rows read as contiguous (strided inputs)
# kernel-lsp: entry=add reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 16, 64


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, cols, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask)  # x's row stride assumed to be its width
    y = tl.load(y_ptr + row * stride_y + offs, mask=mask)
    s = x.to(tl.float16) + y.to(tl.float16)  # a silent fp16 round trip
    tl.store(out_ptr + row * cols + offs, s.to(tl.float32), mask=mask)


def add(x, y):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _add_kernel[(x.shape[0],)](x, y, out, x.shape[1], y.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x, y):
    return x + y


def make_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]
