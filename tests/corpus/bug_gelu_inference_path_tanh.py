# expect: KL200
# class: a path taken only under torch.no_grad() (how inference code calls a kernel): its GELU is the tanh
# approximation, off by up to 1e-3 from the exact GELU the reference computes; with autograd on it is exact
# kernel-lsp: entry=gelu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 256


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, FAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if FAST:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    else:
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y, mask=mask)


def gelu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    fast = not torch.is_grad_enabled()  # serving: no autograd, take the cheaper curve
    _gelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, FAST=fast, BLOCK=1024)
    return out


def ref(x):
    return torch.nn.functional.gelu(x)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
