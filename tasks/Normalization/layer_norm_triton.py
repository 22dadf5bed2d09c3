# kernel-lsp: reference=layer_norm.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

WIDTH_PER_WARP = 512  # columns of a row per warp


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_r, stride_c, eps, BLOCK: tl.constexpr):
    """out = (x - mean) / sqrt(var + eps) * w + b per row, the row whole in registers (BLOCK >= n_cols): read once,
    statistics in fp32 (mean, then the variance around it). w and b are the fp32 parameters, rounded here to the
    input's dtype as the reference's `.to(x.dtype)` rounds them, without two extra launches per call."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    dtype = out_ptr.dtype.element_ty
    w = tl.load(w_ptr + cols, mask=mask).to(dtype).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(dtype).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, (d * rstd * w + b).to(dtype), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        width = triton.next_power_of_2(cols)
        _layer_norm_kernel[(rows,)](x, self.norm.weight, self.norm.bias, out, cols, x.stride(0), x.stride(1),
                                    self.norm.eps, BLOCK=width, num_warps=min(16, max(1, width // WIDTH_PER_WARP)))
        return out
