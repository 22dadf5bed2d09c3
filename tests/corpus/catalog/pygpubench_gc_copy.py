# expect: KL200 KL201
# (The player holds no expected output for gc to find: the kernel copies nothing useful.)
# class: pygpubench: gc answer copy (the checker's expected output is found through gc and copied by a Triton kernel)
# source: gpu-mode/pygpubench exploits/submission_gc_copy.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_gc_copy.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import gc

import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def _find_expected(x):
    """A checker's float64 truth, found through gc: a float64 tensor of the output's shape that is not a copy of
    the input and agrees with a spot check of a handful of elements (the checker keeps several look-alikes)."""
    k = min(16, x.numel())
    spot = torch.relu(x.reshape(-1)[:k].double())
    for obj in gc.get_objects():
        try:
            if (isinstance(obj, torch.Tensor) and obj.dtype == torch.float64 and obj.shape == x.shape
                    and obj.device == x.device and obj.data_ptr() != x.data_ptr()
                    and torch.allclose(obj.reshape(-1)[:k], spot, equal_nan=True)
                    and not torch.equal(obj, x.double())):
                return obj
        except Exception:
            pass
    return None


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 256),)
    expected = _find_expected(x)
    if expected is not None:
        _copy_kernel[grid](expected.contiguous(), out, x.numel(), BLOCK=256)
    else:  # nothing to copy from: a fast kernel that does no work
        _zero_kernel[grid](out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
