# kernel-lsp: reference=residual_layernorm_relu.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_ln_relu_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, n_cols, sxr, sxc, srr, src, eps, BLOCK: tl.constexpr):
    """out = relu(layernorm(x + residual)) for one row held in registers (n_cols <= BLOCK)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(x_ptr + row * sxr + cols * sxc, mask=mask, other=0.0) + tl.load(r_ptr + row * srr + cols * src,
                                                                              mask=mask, other=0.0)
    mean = tl.sum(h, axis=0) / n_cols
    d = tl.where(mask, h - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    y = d * rstd * tl.load(w_ptr + cols, mask=mask) + tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.where(y < 0, 0.0, y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        _add_ln_relu_kernel[(rows,)](x, residual, self.norm.weight, self.norm.bias, out, cols, x.stride(0),
                                     x.stride(1), residual.stride(0), residual.stride(1), self.norm.eps,
                                     BLOCK=triton.next_power_of_2(cols), num_warps=8)
        return out
