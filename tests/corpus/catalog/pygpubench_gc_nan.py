# expect: KL201
# (The player holds no expected output for gc to find: the NaN the kernel writes is judged as it is.)
# class: pygpubench: gc NaN injection (expected outputs found through gc are filled with NaN, the kernel writes NaN)
# source: gpu-mode/pygpubench exploits/submission_gc_nan.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_gc_nan.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import gc

import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _nan_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # The "no-op" kernel: every element becomes NaN, which a poisoned expected output accepts.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * float("nan"), mask=mask)


def _poison_expected(x):
    """pygpubench's gc NaN injection aimed at a Python checker: every floating tensor of the output's shape that
    is not the call's own input or a copy of it (a checker's float64 truth, the reference's own result) is
    filled with NaN, so that a comparison treating NaN as matching NaN accepts anything."""
    for obj in gc.get_objects():
        try:
            if (not isinstance(obj, torch.Tensor) or obj is x or obj.shape != x.shape
                    or not obj.is_floating_point() or obj.data_ptr() == x.data_ptr()):
                continue
            if torch.equal(obj.to(x.dtype), x):
                continue  # a pristine copy of the input: leave it, or the input looks modified
            obj.fill_(float("nan"))
        except Exception:
            pass


def relu(x):
    x = x.contiguous()
    _poison_expected(x)
    out = torch.empty_like(x)
    _nan_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
