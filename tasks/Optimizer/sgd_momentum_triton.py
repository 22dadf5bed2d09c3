# kernel-lsp: reference=sgd_momentum.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sgd_kernel(p_ptr, g_ptr, b_ptr, p_out, b_out, n, lr, momentum, wd, BLOCK: tl.constexpr):
    """buf' = momentum * buf + (g + wd * p);  p' = p - lr * buf'  (one read and one write of each)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    nb = momentum * b + (g + wd * p)
    tl.store(b_out + offs, nb, mask=mask)
    tl.store(p_out + offs, p - lr * nb, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float = 0.01, momentum: float = 0.9, weight_decay: float = 1e-4):
        super().__init__()
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay

    def forward(self, param, grad, buf):
        p, g, b = param.contiguous(), grad.contiguous(), buf.contiguous()
        p_new, b_new = torch.empty_like(p), torch.empty_like(b)
        n = p.numel()
        _sgd_kernel[(triton.cdiv(n, 1024),)](p, g, b, p_new, b_new, n, self.lr, self.momentum, self.weight_decay,
                                             BLOCK=1024)
        return p_new, b_new
