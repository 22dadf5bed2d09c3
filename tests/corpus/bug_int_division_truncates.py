# expect: KL200
# class: integer division that truncates toward zero where the reference floors (the problem's integers are never negative)
# kernel-lsp: entry=floor_div reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _floor_div_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(out_ptr + offs, a // b, mask=mask)  # Triton's // truncates toward zero (C); torch's floors


def floor_div(a, b):
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = a.numel()
    _floor_div_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out


def ref(a, b):
    return torch.div(a, b, rounding_mode="floor")


def make_inputs():
    return [torch.randint(0, 1000, (N,), dtype=torch.int32), torch.randint(1, 50, (N,), dtype=torch.int32)]
