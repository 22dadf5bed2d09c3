# expect: KL206
# class: an output buffer allocated once and returned by every call: each result is right when it is returned, and
# overwritten by the next call (a caller that keeps two results sees two copies of the second)
# kernel-lsp: entry=silu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000


@triton.jit
def _silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=mask)


_buffers = {}


def silu(x):
    x = x.contiguous()
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _buffers:
        _buffers[key] = torch.empty_like(x)
    out = _buffers[key]
    n = x.numel()
    _silu_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512)
    return out


def ref(x):
    return torch.nn.functional.silu(x)


def make_inputs():
    return [torch.randn(N)]
