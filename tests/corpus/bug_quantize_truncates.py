# expect: KL200
# class: quantization truncates instead of rounding
# kernel-lsp: entry=quantize reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 16, 300


@triton.jit
def _quantize_kernel(x_ptr, s_ptr, q_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + row)
    v = x / s
    r = v
    r = tl.minimum(tl.maximum(r, -128.0), 127.0)
    tl.store(q_ptr + row * n_cols + cols, r.to(tl.int8), mask=mask)


def quantize(x, scale):
    x = x.contiguous()
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.int8, device=x.device)
    _quantize_kernel[(m,)](x, scale.contiguous(), q, n, x.stride(0), BLOCK=triton.next_power_of_2(n))
    return q


def ref(x, scale):
    v = x / scale[:, None]
    r = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return r.clamp(-128, 127).to(torch.int8)


def make_inputs():
    x = torch.randn(M, N) * 3
    return [x, (x.abs().amax(dim=1) / 100).clamp_min(1e-3)]
