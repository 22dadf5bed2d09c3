# expect: clean
# class: correct bf16 row reduction with fp32 accumulation
# kernel-lsp: entry=row_sum reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 8, 4096


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(tl.bfloat16))


def row_sum(x):
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    _row_sum_kernel[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK=512)
    return out


def ref(x):
    return x.sum(dim=-1)


def make_inputs():
    return [torch.randn(M, N).bfloat16()]
