# kernel-lsp: reference=silu.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """SiLU / swish: out[i] = f(x[i]), computed in fp32, stored in the input's dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        n = xc.numel()
        _silu_kernel[(triton.cdiv(n, 1024),)](xc, out, n, BLOCK=1024, num_warps=4)
        return out
