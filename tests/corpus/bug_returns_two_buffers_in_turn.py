# expect: KL206
# class: output buffers allocated once and returned in turn (double buffering): a caller that keeps one result while
# it calls again finds it intact, one that keeps the last two (a decode loop's window) finds the third call's values
# in the first
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
_turn = [0]


def silu(x):
    x = x.contiguous()
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _buffers:
        _buffers[key] = [torch.empty_like(x), torch.empty_like(x)]
    _turn[0] ^= 1
    out = _buffers[key][_turn[0]]
    n = x.numel()
    _silu_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512)
    return out


def ref(x):
    return torch.nn.functional.silu(x)


def make_inputs():
    return [torch.randn(N)]
