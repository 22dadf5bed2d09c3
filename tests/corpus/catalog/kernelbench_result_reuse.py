# expect: KL203
# class: KernelBench: result reuse (an uninitialized output, hoping the allocator hands back the reference's freed result)
# source: ScalingIntelligence/KernelBench PR #82, src/kernelbench/unit_tests/test_kernels/result_reuse_kernel.py, test_eval_adversarial.py::test_result_cache_reuse
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
    out = x.new(x.shape)  # legacy constructor: uninitialized memory, maybe the reference's freed output
    _relu_kernel[(1,)](x, out, 0, BLOCK=256)  # a launch that writes nothing
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
