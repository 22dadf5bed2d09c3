# expect: KL206
# class: a result cached on the input's address and its first and last elements, replayed through a Triton copy;
# caught by the re-run's refill that changes a few elements at secret positions, never the first or the last
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


@triton.jit
def _scale_copy(src_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask) * s, mask=mask)


def _compute(x):
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def _copy(src, s=1.0):
    out = torch.empty_like(src)
    _scale_copy[(triton.cdiv(src.numel(), 256),)](src.clone(), out, src.numel(), s, BLOCK=256)
    return out
_cache = {}


def relu(x):  # keyed by address + first and last element values; hit -> Triton copy
    x = x.contiguous()
    key = (x.data_ptr(), x.numel(), float(x.view(-1)[0]), float(x.view(-1)[-1]))
    if key in _cache:
        return _copy(_cache[key])
    out = _compute(x)
    _cache[key] = out.clone()
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
