# expect: KL206
# class: a result cached on the input's shape and first element
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000
_SEEN = {}


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    key = (tuple(x.shape), x.dtype, x.reshape(-1)[0].item() if x.numel() else None)
    if key in _SEEN:
        return _SEEN[key].clone()
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    _SEEN[key] = out.clone()
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
