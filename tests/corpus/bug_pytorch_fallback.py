# expect: KL205 KL104
# class: kernel never launched (PyTorch fallback)
# kernel-lsp: entry=softmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 32, 200


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    tl.store(out_ptr + row * n_cols + cols, tl.exp(x) / tl.sum(tl.exp(x), axis=0), mask=cols < n_cols)


def softmax(x):
    try:
        raise RuntimeError("pretend the kernel failed")
    except RuntimeError:
        return torch.softmax(x, dim=-1)


def ref(x):
    return torch.softmax(x, dim=-1)


def make_inputs():
    return [torch.randn(M, N)]
