# kernel-lsp: reference=quant_fp8_e4m3.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quant_fp8_kernel(x_ptr, s_ptr, q_ptr, n, BLOCK: tl.constexpr):
    """q = fp8e4m3(clamp(x / scale, -448, 448)) with Triton's round-to-nearest-even cast (NaN kept)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # IEEE division (Triton's `/` is approximate on the GPU): the cast must see PyTorch's exact quotient.
    v = tl.math.div_rn(tl.load(x_ptr + offs, mask=mask), tl.load(s_ptr))
    v = tl.where(v > 448.0, 448.0, tl.where(v < -448.0, -448.0, v))
    tl.store(q_ptr + offs, v.to(tl.float8e4nv, fp_downcast_rounding="rtne"), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        q = torch.empty(xc.shape, dtype=torch.float8_e4m3fn, device=x.device)
        n = xc.numel()
        _quant_fp8_kernel[(triton.cdiv(n, 1024),)](xc, scale, q, n, BLOCK=1024)
        return q
