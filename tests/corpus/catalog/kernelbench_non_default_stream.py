# expect: KL406 | KL403 | KL403 KL406
# (KL403 on an H200, 2026-12-02: the caller's events see none of the work, so the time is below the copy rate)
# class: KernelBench: non-default stream (each call launches on a fresh stream that the caller's stream never waits for)
# device: cuda
# source: ScalingIntelligence/KernelBench PR #82, src/kernelbench/unit_tests/test_kernels/non_default_stream_kernel.py, test_eval_adversarial.py::test_non_default_stream
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1 << 24  # long enough for the escaped work to show on the host clock


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    if x.is_cuda:
        side = torch.cuda.Stream()  # like cudaStreamCreateWithFlags(cudaStreamNonBlocking), leaked
        side.wait_stream(torch.cuda.current_stream())  # the inputs are ready; the result is never waited for
        with torch.cuda.stream(side):
            _relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    else:
        _relu_kernel[grid](x, out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
