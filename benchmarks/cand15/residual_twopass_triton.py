# kernel-lsp: reference=../../tasks/Fusion/residual_layernorm_relu.py
"""residual_layernorm_relu as torch.compile's generated kernel does it (benchmarks/cand15/inductor_code.py showed
it): a first pass over the row in RB-column chunks keeps per-lane Welford sums (mean, squared deviations, count)
and loads with FIRST's eviction policy (evict_last keeps the row in L2), the lanes are combined, and a second pass
reloads the row (from L2) with SECOND's policy and writes relu(layernorm(x + residual)). Issue 28: the task's
one-pass kernel is 0.93-0.95x torch.compile back to back at 16384 x 2048 fp32."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

RB, WARPS, FIRST, SECOND = 2048, 8, "evict_last", "evict_first"


@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    """Chan's parallel update: two (mean, sum of squared deviations, count) triples of disjoint parts as one."""
    n = n_a + n_b
    frac = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    delta = mean_b - mean_a
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac, n


@triton.jit
def _add_ln_relu_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, n_cols, sxr, sxc, srr, src, eps, RB: tl.constexpr,
                        FIRST: tl.constexpr, SECOND: tl.constexpr):
    """One row per program: Welford over x + residual in RB-column chunks, then the normalized row."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, RB)
    mean = tl.zeros((RB,), dtype=tl.float32)
    m2 = tl.zeros((RB,), dtype=tl.float32)
    cnt = tl.zeros((RB,), dtype=tl.float32)
    for c0 in range(0, n_cols, RB):
        cols = c0 + offs
        mask = cols < n_cols
        h = (tl.load(x_ptr + row * sxr + cols * sxc, mask=mask, other=0.0, eviction_policy=FIRST)
             + tl.load(r_ptr + row * srr + cols * src, mask=mask, other=0.0, eviction_policy=FIRST))
        cnt_next = cnt + mask.to(tl.float32)
        delta = h - mean
        mean_next = mean + tl.where(mask, delta / tl.where(mask, cnt_next, 1.0), 0.0)
        m2 = m2 + tl.where(mask, delta * (h - mean_next), 0.0)
        mean = mean_next
        cnt = cnt_next
    mu, m2_row, _ = tl.reduce((mean, m2, cnt), 0, _welford_combine)
    rstd = 1.0 / tl.sqrt(m2_row / n_cols + eps)
    for c0 in range(0, n_cols, RB):
        cols = c0 + offs
        mask = cols < n_cols
        h = (tl.load(x_ptr + row * sxr + cols * sxc, mask=mask, other=0.0, eviction_policy=SECOND)
             + tl.load(r_ptr + row * srr + cols * src, mask=mask, other=0.0, eviction_policy=SECOND))
        w = tl.load(w_ptr + cols, mask=mask, eviction_policy="evict_last")
        b = tl.load(b_ptr + cols, mask=mask, eviction_policy="evict_last")
        y = (h - mu) * rstd * w + b
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
        if out.numel() == 0:
            return out
        _add_ln_relu_kernel[(rows,)](x, residual, self.norm.weight, self.norm.bias, out, cols, x.stride(0),
                                     x.stride(1), residual.stride(0), residual.stride(1), self.norm.eps,
                                     RB=min(RB, triton.next_power_of_2(cols)), FIRST=FIRST, SECOND=SECOND,
                                     num_warps=WARPS)
        return out
