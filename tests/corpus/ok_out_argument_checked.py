# expect: clean
# class: correct add into an out= tensor that refuses a mis-sized out (PyTorch only resizes it, with a deprecation warning)
# kernel-lsp: entry=add_out reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, out_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs * out_stride, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add_out(x, y, out):
    if out.shape != x.shape or y.shape != x.shape:
        raise ValueError(f"add_out: out {tuple(out.shape)} must match x {tuple(x.shape)}")
    x, y = x.contiguous(), y.contiguous()
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, out.stride(0), BLOCK=1024)
    return out


def ref(x, y, out):
    return torch.add(x, y, out=out)


def make_inputs():
    return [torch.randn(N), torch.randn(N), torch.empty(N)]
