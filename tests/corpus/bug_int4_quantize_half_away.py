# expect: KL200
# class: a 4-bit quantizer that breaks ties away from zero (torch.round breaks them to even); its scale absmax / 7 puts no grid value on a tie
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
    v = x / s
    r = tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(-v + 0.5))  # half away from zero
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
