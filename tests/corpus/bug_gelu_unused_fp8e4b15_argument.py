# expect: KL200
# class: wrong gelu behind an unused fp8e4b15 argument the kernel never casts (its values were not judged on the CPU)
# kernel-lsp: entry=gelu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 16, 513


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, w_ptr, BLOCK: tl.constexpr):
    """GELU; w_ptr: a table for a tl.dot epilogue (unused here)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.5))  # wrong: 1/sqrt(2) belongs here
    tl.store(out_ptr + offs, y, mask=mask)


def gelu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    w = triton.reinterpret(torch.zeros(1, dtype=torch.uint8, device=x.device), tl.float8e4b15)
    _gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), w, BLOCK=1024)
    return out


def ref(x):
    return torch.nn.functional.gelu(x)


def make_inputs():
    return [torch.randn(M, N)]
