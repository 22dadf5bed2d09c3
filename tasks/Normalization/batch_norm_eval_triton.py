# kernel-lsp: reference=batch_norm_eval.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _batch_norm_kernel(x_ptr, scale_ptr, shift_ptr, out_ptr, C, HW, sn, sc, sh, sw, W, BLOCK: tl.constexpr):
    """out[n, c, h, w] = x[n, c, h, w] * scale[c] + shift[c]; one program per (n, c) plane tile."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    h = offs // W
    w = offs % W
    x = tl.load(x_ptr + n * sn + c * sc + h * sh + w * sw, mask=mask)
    scale = tl.load(scale_ptr + c)
    shift = tl.load(shift_ptr + c)
    tl.store(out_ptr + plane * HW + offs, x * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1.0, 0.1)
            self.bn.bias.normal_(0.0, 0.1)
        self.bn.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        bn = self.bn
        scale = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).contiguous()
        shift = (bn.bias - bn.running_mean * scale).contiguous()
        out = torch.empty((n, c, h, w), dtype=x.dtype, device=x.device)
        grid = (n * c, triton.cdiv(h * w, 1024))
        _batch_norm_kernel[grid](x, scale, shift, out, c, h * w, x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                                 w, BLOCK=1024)
        return out
