# kernel-lsp: reference=rmsprop.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsprop_kernel(p_ptr, g_ptr, s_ptr, p_out, s_out, n, lr, alpha, eps, BLOCK: tl.constexpr):
    """s' = alpha s + (1 - alpha) g^2 (fp32);  p' = p - lr g / (sqrt(s') + eps), rounded to p's dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    s = alpha * tl.load(s_ptr + offs, mask=mask) + (1 - alpha) * g * g
    tl.store(s_out + offs, s, mask=mask)
    tl.store(p_out + offs, (p - lr * g / (tl.sqrt(s) + eps)).to(p_out.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__()
        self.lr, self.alpha, self.eps = lr, alpha, eps

    def forward(self, param, grad, sq):
        p, g, s = param.contiguous(), grad.contiguous(), sq.contiguous()
        p_new, s_new = torch.empty_like(p), torch.empty_like(s)
        n = p.numel()
        _rmsprop_kernel[(triton.cdiv(n, 1024),)](p, g, s, p_new, s_new, n, self.lr, self.alpha, self.eps, BLOCK=1024)
        return p_new, s_new
