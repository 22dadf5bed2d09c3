# kernel-lsp: reference=../../tasks/Convolution/pointwise_conv2d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BO, BP, BC, WARPS, STAGES = 128, 128, 64, 8, 3  # tile: output channels x pixels x input channels


@triton.jit
def _pointwise_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, C_out, HW, W, sxn, sxc, sxh, sxw,
                      BO: tl.constexpr, BP: tl.constexpr, BC: tl.constexpr, FLAT: tl.constexpr):
    """out[n, o, p] = bias[o] + sum_c w[o, c] x[n, c, p] over pixels p: a (C_out x C_in) @ (C_in x HW) GEMM.
    FLAT: each channel's pixels are one contiguous run (stride 1, rows unpadded), so loads need no division."""
    n = tl.program_id(2).to(tl.int64)
    ro = tl.program_id(0) * BO + tl.arange(0, BO)
    rp = tl.program_id(1) * BP + tl.arange(0, BP)
    rc = tl.arange(0, BC)
    if FLAT:
        pix = rp
    else:
        pix = (rp // W) * sxh + (rp % W) * sxw
    acc = tl.zeros((BO, BP), dtype=tl.float32)
    for c in range(0, C_in, BC):
        w = tl.load(w_ptr + ro[:, None] * C_in + (c + rc)[None, :],
                    mask=(ro[:, None] < C_out) & ((c + rc)[None, :] < C_in), other=0.0)
        x = tl.load(x_ptr + n * sxn + (c + rc)[:, None] * sxc + pix[None, :],
                    mask=((c + rc)[:, None] < C_in) & (rp[None, :] < HW), other=0.0)
        acc = tl.dot(w, x, acc)
    acc += tl.load(b_ptr + ro, mask=ro < C_out, other=0.0).to(tl.float32)[:, None]
    tl.store(out_ptr + n * C_out * HW + ro[:, None] * HW + rp[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(ro[:, None] < C_out) & (rp[None, :] < HW))


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c_in, h, w = x.shape
        weight = self.conv.weight.to(x.dtype).reshape(-1, c_in).contiguous()
        c_out = weight.shape[0]
        out = torch.empty((n, c_out, h, w), dtype=x.dtype, device=x.device)
        flat = x.stride(3) == 1 and x.stride(2) == w
        grid = (triton.cdiv(c_out, BO), triton.cdiv(h * w, BP), n)
        bias = self.conv.bias.to(x.dtype)
        _pointwise_kernel[grid](x, weight, bias, out, c_in, c_out, h * w, w, x.stride(0), x.stride(1), x.stride(2),
                                x.stride(3), BO=BO, BP=BP, BC=BC, FLAT=flat, num_warps=WARPS, num_stages=STAGES)
        return out
