# kernel-lsp: reference=smooth_l1.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _smooth_l1_kernel(p_ptr, t_ptr, out_ptr, n, beta, BLOCK: tl.constexpr):
    """out = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, with d = p - t (fp32 math)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask).to(tl.float32) - tl.load(t_ptr + offs, mask=mask).to(tl.float32)
    a = tl.abs(d)
    y = tl.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p, t = pred.contiguous(), target.contiguous()
        out = torch.empty_like(p)
        n = p.numel()
        _smooth_l1_kernel[(triton.cdiv(n, 1024),)](p, t, out, n, 1.0, BLOCK=1024)
        return out
