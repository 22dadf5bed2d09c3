# expect: KL221
# class: partial fallback: the kernel computes the first rows, PyTorch the rest
# kernel-lsp: entry=gelu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 24, 257


@triton.jit
def _gelu_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def gelu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    rows, cols = x.shape
    done = rows - rows // 4
    _gelu_rows[(done,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    out[done:] = torch.nn.functional.gelu(x[done:])
    return out


def ref(x):
    return torch.nn.functional.gelu(x)


def make_inputs():
    return [torch.randn(M, N)]
