# expect: KL200
# class: fp16 accumulation
# kernel-lsp: entry=row_sum reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 7, 4096  # inputs and outputs fit the CPU budget: the rows keep their full length


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((), dtype=tl.float16)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
        acc += tl.sum(x, axis=0).to(tl.float16)
    tl.store(out_ptr + row, acc)


def row_sum(x):
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    _row_sum_kernel[(m,)](x, out, n, x.stride(0), BLOCK=64)
    return out


def ref(x):
    return x.sum(dim=-1)


def make_inputs():
    return [torch.rand(M, N).half()]
