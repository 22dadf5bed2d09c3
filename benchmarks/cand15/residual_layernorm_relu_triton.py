# kernel-lsp: reference=../../tasks/Fusion/residual_layernorm_relu.py
"""The task's kernel with ROWS rows per program, its warps, the loads' eviction policy (EVICT) and the store's
cache modifier (STORE_CM) as constants, to time on a GPU (issue 28: 0.95x torch.compile at 16384 x 2048 fp32; the
rows and warps alone did not close it, benchmarks/cand14)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS, WARPS, EVICT, STORE_CM = 1, 8, "", ""


@triton.jit
def _add_ln_relu_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, sxr, sxc, srr, src, eps,
                        ROWS: tl.constexpr, BLOCK: tl.constexpr, EVICT: tl.constexpr,
                        W_EVICT: tl.constexpr, STORE_CM: tl.constexpr):
    """out = relu(layernorm(x + residual)) for ROWS rows held in registers (n_cols <= BLOCK)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    h = (tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxc, mask=mask, other=0.0,
                 eviction_policy=EVICT)
         + tl.load(r_ptr + rows[:, None] * srr + cols[None, :] * src, mask=mask, other=0.0,
                   eviction_policy=EVICT))
    mean = tl.sum(h, axis=1) / n_cols
    d = tl.where(mask, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, eviction_policy=W_EVICT)
    b = tl.load(b_ptr + cols, mask=cols < n_cols, eviction_policy=W_EVICT)
    y = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], tl.where(y < 0, 0.0, y), mask=mask,
             cache_modifier=STORE_CM)


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
        if out.numel() == 0:
            return out
        _add_ln_relu_kernel[(triton.cdiv(rows, ROWS),)](
            x, residual, self.norm.weight, self.norm.bias, out, rows, cols, x.stride(0), x.stride(1),
            residual.stride(0), residual.stride(1), self.norm.eps, ROWS=ROWS, BLOCK=triton.next_power_of_2(cols),
            EVICT=EVICT, W_EVICT="evict_last" if EVICT else "", STORE_CM=STORE_CM, num_warps=WARPS)
        return out
