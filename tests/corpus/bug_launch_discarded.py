# expect: KL221
# class: launch-and-discard: the kernel runs into a scratch buffer and PyTorch's result is returned
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    scratch = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, scratch, x.numel(), BLOCK=256)
    return torch.relu(x)


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
