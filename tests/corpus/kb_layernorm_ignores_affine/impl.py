# expect: KL200
# class: a layer norm that never applies its weight and bias: right while they hold their initial ones and zeros,
# wrong for any trained model
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layer_norm_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    tl.store(out_ptr + row * n_cols + cols, d / tl.sqrt(var + eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _layer_norm_kernel[(x.shape[0],)](x, out, x.shape[1], self.norm.eps,
                                          BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
