# kernel-lsp: reference=depthwise_conv2d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BH, BW, WARPS = 32, 128, 8  # output tile rows and columns per program


@triton.jit
def _dwconv3x3_kernel(x_ptr, w_ptr, out_ptr, C, H, W, sxn, sxc, sxh, sxw, BH: tl.constexpr, BW: tl.constexpr):
    """out[n, c, h, w] = sum_{i, j in 0..2} w[c, i, j] x[n, c, h + i - 1, w + j - 1], zero padding."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    rh = tl.program_id(1) * BH + tl.arange(0, BH)
    rw = tl.program_id(2) * BW + tl.arange(0, BW)
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for i in range(3):
        for j in range(3):
            hh = rh[:, None] + (i - 1)
            ww = rw[None, :] + (j - 1)
            inside = (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
            x = tl.load(x_ptr + n * sxn + c * sxc + hh * sxh + ww * sxw, mask=inside, other=0.0)
            acc += x * tl.load(w_ptr + c * 9 + i * 3 + j)
    tl.store(out_ptr + plane * H * W + rh[:, None] * W + rw[None, :], acc, mask=(rh[:, None] < H) & (rw[None, :] < W))


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        out = torch.empty((n, c, h, w), dtype=x.dtype, device=x.device)
        bh, bw = min(BH, triton.next_power_of_2(h)), min(BW, triton.next_power_of_2(w))
        grid = (n * c, triton.cdiv(h, bh), triton.cdiv(w, bw))
        _dwconv3x3_kernel[grid](x, self.conv.weight.contiguous(), out, c, h, w, x.stride(0), x.stride(1),
                                x.stride(2), x.stride(3), BH=bh, BW=bw, num_warps=WARPS)
        return out
