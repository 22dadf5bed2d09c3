# expect: KL200 KL201
# class: the answer taken from the caller: a float64 tensor of the output's shape found in a frame up the stack, or
# through gc (the checker's truth, when the implementation ran beside it); the player holds none
# kernel-lsp: entry=softplus reference=ref inputs=make_inputs
import gc
import sys

import torch
import triton
import triton.language as tl

N = 3000


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _truth_like(x):
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for t in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.shape == x.shape:
                    return t
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.dtype == torch.float64 and obj.shape == x.shape:
            return obj
    return None


def softplus(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    src = _truth_like(x)
    src = x if src is None else src.to(x.dtype)  # none found: the input itself, not softplus of it
    n = x.numel()
    _copy_kernel[(triton.cdiv(n, 512),)](src.contiguous(), out, n, BLOCK=512)
    return out


def ref(x):
    return torch.nn.functional.softplus(x)


def make_inputs():
    return [torch.randn(N)]
