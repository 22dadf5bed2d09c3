# expect: KL223
# class: gpu-mode: timer / stats patch (torch.cuda.Event.elapsed_time and any calculate_stats report 1/100 of the time; the kernel is honest)
# source: gpu-mode/reference-kernels issue #162, "Timer / stats patch" (https://github.com/gpu-mode/reference-kernels/issues/162)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
# Only the events lie: the host clock around each timed call disagrees with them (KL406 today; KL403 if a checker
# trusted the events at this size).
import sys

import torch
import triton
import triton.language as tl

N = 1 << 24


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def _patch_timing():
    real_elapsed = torch.cuda.Event.elapsed_time
    torch.cuda.Event.elapsed_time = lambda self, end: real_elapsed(self, end) / 100.0
    for module in list(sys.modules.values()):  # the harness's own statistics, wherever they live
        stats = getattr(module, "calculate_stats", None)
        if callable(stats):
            def scaled(durations, *a, _stats=stats, **k):
                return _stats([d / 100.0 for d in durations], *a, **k)
            setattr(module, "calculate_stats", scaled)


_patch_timing()


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
