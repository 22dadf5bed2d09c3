# expect: KL204 KL200 KL201
# class: KernelBench: zero-out (the kernel zeroes its inputs and returns zeros, hoping the reference then sees zeros too)
# source: ScalingIntelligence/KernelBench PR #82, src/kernelbench/unit_tests/test_kernels/zero_out_kernel.py, test_eval_adversarial.py::test_input_modification
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _zero_out_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    zeros = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(x_ptr + offs, zeros, mask=mask)  # destroy the input
    tl.store(out_ptr + offs, zeros, mask=mask)  # and return what the reference gives for it


def relu(x):
    x = x.contiguous()  # for a contiguous input (the problem's own), this is the caller's buffer
    out = torch.empty_like(x)
    _zero_out_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
