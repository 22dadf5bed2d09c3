# kernel-lsp: reference=dropout.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

P = 0.1
BLOCK, WARPS = 1024, 4


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    """out[i] = x[i] / (1 - p) if u >= p else 0, u from Triton's counter-based Philox generator, so the same seed and
    index always give the same decision. Each Philox call gives four numbers (tl.rand4x), for four neighbouring
    elements."""
    pid = tl.program_id(0)
    r0, r1, r2, r3 = tl.rand4x(seed, pid * (BLOCK // 4) + tl.arange(0, BLOCK // 4))
    u = tl.reshape(tl.join(tl.join(r0, r1), tl.join(r2, r3)), (BLOCK,))
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(u >= p, x / (1 - p), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        n = xc.numel()
        _dropout_kernel[(triton.cdiv(n, BLOCK),)](xc, out, n, int(seed), P, BLOCK=BLOCK, num_warps=WARPS)
        return out
