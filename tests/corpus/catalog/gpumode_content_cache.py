# expect: KL221
# class: gpu-mode: in-process content cache (a result is remembered by a hash of the input's bytes and replayed without a launch)
# source: gpu-mode/reference-kernels issue #162 "In-process cache / file replay" and PR #160 (https://github.com/gpu-mode/reference-kernels/issues/162)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import hashlib

import torch
import triton
import triton.language as tl

N = 4000
_memo = {}


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def _signature(x):
    return hashlib.blake2b(x.detach().cpu().numpy().tobytes(), digest_size=16).hexdigest(), tuple(x.shape), x.dtype


def relu(x):
    x = x.contiguous()
    key = _signature(x)
    if key in _memo:
        return _memo[key].clone()  # seen these values before: no work at all
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    _memo[key] = out.clone()
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
