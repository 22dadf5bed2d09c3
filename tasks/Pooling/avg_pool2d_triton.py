# kernel-lsp: reference=avg_pool2d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _avg_pool2x2_kernel(x_ptr, out_ptr, C, H_out, W_out, sxn, sxc, sxh, sxw, BH: tl.constexpr, BW: tl.constexpr):
    """out[n, c, i, j] = mean of x[n, c, 2i:2i+2, 2j:2j+2], summed in fp32. Each program reads whole input rows
    (2 * BW contiguous elements, not four stride-2 gathers) and pairs neighbouring columns in registers."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    ri = tl.program_id(1) * BH + tl.arange(0, BH)
    rj = tl.program_id(2) * 2 * BW + tl.arange(0, 2 * BW)  # input columns
    mask = (ri[:, None] < H_out) & (rj[None, :] < 2 * W_out)
    top = x_ptr + n * sxn + c * sxc + (2 * ri[:, None]) * sxh + rj[None, :] * sxw
    rows = (tl.load(top, mask=mask, other=0.0).to(tl.float32)
            + tl.load(top + sxh, mask=mask, other=0.0).to(tl.float32))  # (BH, 2 * BW)
    left, right = tl.split(tl.reshape(rows, (BH, BW, 2)))
    oj = tl.program_id(2) * BW + tl.arange(0, BW)
    omask = (ri[:, None] < H_out) & (oj[None, :] < W_out)
    tl.store(out_ptr + plane * H_out * W_out + ri[:, None] * W_out + oj[None, :],
             ((left + right) * 0.25).to(out_ptr.dtype.element_ty), mask=omask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        ho, wo = h // 2, w // 2
        out = torch.empty((n, c, ho, wo), dtype=x.dtype, device=x.device)
        bw = min(128, triton.next_power_of_2(wo))
        bh = max(1, min(triton.next_power_of_2(ho), 2048 // bw))
        grid = (n * c, triton.cdiv(ho, bh), triton.cdiv(wo, bw))
        _avg_pool2x2_kernel[grid](x, out, c, ho, wo, x.stride(0), x.stride(1), x.stride(2), x.stride(3), BH=bh, BW=bw,
                                  num_warps=4)
        return out
