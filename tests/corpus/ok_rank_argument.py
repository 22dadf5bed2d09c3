# expect: clean
# class: correct kernel with a fixed int argument (a rank) that bounds the sizes
# kernel-lsp: entry=project reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 64, 48
RANK = 8


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def project(x, k):
    if k > min(x.shape):
        raise ValueError(f"rank {k} exceeds min(x.shape) = {min(x.shape)}")
    x = x.contiguous()
    out = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out[:, :k].contiguous()


def ref(x, k):
    return (x * 2.0)[:, :k]


def make_inputs():
    return [torch.randn(M, N), RANK]
