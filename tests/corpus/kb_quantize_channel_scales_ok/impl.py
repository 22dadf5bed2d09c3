# expect: clean
# class: correct per-channel int8 quantization with scales the module holds: halves to even after a correctly rounded
# division, as torch.round(x / scale)
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quantize_kernel(x_ptr, scale_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.load(scale_ptr + cols, mask=mask, other=1.0)
    v = tl.div_rn(x, s)
    f = tl.floor(v)
    d = v - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) == 1.0
    q = tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1.0, f)  # half to even
    q = tl.minimum(tl.maximum(q, -128.0), 127.0)
    tl.store(out_ptr + row * n_cols + cols, q.to(tl.int8), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.register_buffer("scale", torch.rand(channels) * 0.02 + 0.01)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        n = x.shape[-1]
        _quantize_kernel[(x.numel() // n,)](x, self.scale, out, n, BLOCK=triton.next_power_of_2(n))
        return out
