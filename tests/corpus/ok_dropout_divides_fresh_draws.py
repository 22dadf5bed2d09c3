# expect: clean
# class: a dropout that divides by 1 - p where the reference multiplies by its inverse: outputs an ulp apart, atoms on the structured variant's constant rows
# kernel-lsp: entry=dropout reference=ref inputs=make_inputs
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.2


@triton.jit
def _k(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, offs) > p, x / (1 - p), 0.0), mask=m)


def dropout(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    seed = int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())
    _k[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), seed, P, BLOCK=1024)
    return out


def ref(x):
    return F.dropout(x, P, training=True)


def make_inputs():
    return [torch.randn(64, 256)]
