# expect: clean
# class: correct float64 softmax given its temperature as a float scalar (which reaches the kernel as fp32)
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 32, 200
TEMPERATURE = 0.7


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, inv_temperature, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    z = x * inv_temperature
    z = z - tl.max(z, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], 1.0 / TEMPERATURE, BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x):
    return torch.softmax(x / TEMPERATURE, dim=-1)


def make_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float64)]
