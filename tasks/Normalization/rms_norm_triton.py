# kernel-lsp: reference=rms_norm.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

WIDTH_PER_WARP = 512  # columns of a row per warp


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_r, stride_c, eps, BLOCK: tl.constexpr):
    """out = x / sqrt(mean(x^2) + eps) * w per row, fp32 statistics; the row whole in registers (BLOCK >= n_cols),
    read once."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        width = triton.next_power_of_2(cols)
        _rms_norm_kernel[(rows,)](x, self.weight.float().contiguous(), out, cols, x.stride(0), x.stride(1),
                                  self.eps, BLOCK=width, num_warps=min(16, max(1, width // WIDTH_PER_WARP)))
        return out
