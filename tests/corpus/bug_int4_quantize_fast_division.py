# expect: KL200
# device: cuda
# class: a 4-bit quantizer that rounds ties to even but divides with Triton's `/`, which on a GPU is an approximate
# fp32 division (a few ulps): on a row of repeated values x / s is an exact tie (-3.5) in PyTorch and -3.4999998 here,
# so one level off (the CPU interpreter divides exactly: right there)
# kernel-lsp: entry=quantize reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 32, 256


@triton.jit
def _quantize_kernel(x_ptr, q_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.maximum(tl.max(tl.abs(x), axis=0) / 7.0, 1e-8)
    v = x / s  # on a GPU an approximate division (div.full.f32): a tie of the exact quotient can land either side
    f = tl.floor(v)
    d = v - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) == 1.0
    r = tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1.0, f)  # half to even
    tl.store(q_ptr + row * n_cols + cols, r.to(tl.int8), mask=mask)


def quantize(x):
    x = x.contiguous()
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.int8, device=x.device)
    _quantize_kernel[(m,)](x, q, n, BLOCK=triton.next_power_of_2(n))
    return q


def ref(x):
    s = (x.abs().amax(dim=1, keepdim=True) / 7.0).clamp_min(1e-8)
    return torch.round(x / s).to(torch.int8)


def make_inputs():
    return [torch.randn(M, N)]
