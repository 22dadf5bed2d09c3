# expect: clean
# class: correct sigmoid then row mean, summed serially in fp32 over a long row
# kernel-lsp: entry=sigmoid_mean reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, LENGTH = 3, 2048


@triton.jit
def _sigmoid_mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):  # one lane: 2048 terms added one after another
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        acc += tl.where(cols < n, 1.0 / (1.0 + tl.exp(-x)), 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n)


def sigmoid_mean(x):
    x = x.contiguous()
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    _sigmoid_mean_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1)
    return out


def ref(x):
    return torch.sigmoid(x).mean(dim=1)


def make_inputs():
    return [torch.randn(ROWS, LENGTH) + 2.0]
