# expect: KL200
# class: a float64 softmax whose input is rounded to float32 on load (float64 problems are judged at float64)
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 32, 200


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32).to(tl.float64)  # float64 input rounded to float32: about 1e-7 relative error
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float64)]
