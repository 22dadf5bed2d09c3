# expect: KL104
# class: floor of an int64 tensor is a copy: a clone without a launch is correct (KL205 is information)
# kernel-lsp: entry=floor reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _floor_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.floor(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def floor(x):
    if not x.is_floating_point():
        return x.clone()  # the floor of an integer is the integer
    x = x.contiguous()
    out = torch.empty_like(x)
    _floor_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.floor(x)


def make_inputs():
    return [torch.randint(-1000, 1000, (N,))]
