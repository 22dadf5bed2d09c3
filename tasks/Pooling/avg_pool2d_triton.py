# kernel-lsp: reference=avg_pool2d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _avg_pool2x2_kernel(x_ptr, out_ptr, C, H_out, W_out, sxn, sxc, sxh, sxw, BH: tl.constexpr, BW: tl.constexpr):
    """out[n, c, i, j] = mean of x[n, c, 2i:2i+2, 2j:2j+2], summed in fp32."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    ri = tl.program_id(1) * BH + tl.arange(0, BH)
    rj = tl.program_id(2) * BW + tl.arange(0, BW)
    mask = (ri[:, None] < H_out) & (rj[None, :] < W_out)
    base = x_ptr + n * sxn + c * sxc
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for di in range(2):
        for dj in range(2):
            acc += tl.load(base + (2 * ri[:, None] + di) * sxh + (2 * rj[None, :] + dj) * sxw, mask=mask,
                           other=0.0).to(tl.float32)
    tl.store(out_ptr + plane * H_out * W_out + ri[:, None] * W_out + rj[None, :],
             (acc * 0.25).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        ho, wo = h // 2, w // 2
        out = torch.empty((n, c, ho, wo), dtype=x.dtype, device=x.device)
        grid = (n * c, triton.cdiv(ho, 16), triton.cdiv(wo, 64))
        _avg_pool2x2_kernel[grid](x, out, c, ho, wo, x.stride(0), x.stride(1), x.stride(2), x.stride(3), BH=16, BW=64)
        return out
