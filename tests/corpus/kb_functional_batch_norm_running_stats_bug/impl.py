# expect: KL200
# class: a batch norm that always normalizes with the running statistics, where the reference calls
# `F.batch_norm(..., training=self.training)` (no batch-norm module): right in eval mode, wrong in the module's
# default training mode (batch statistics)
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bn_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, C, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + cols, mask=mask, other=0.0)
    var = tl.load(var_ptr + cols, mask=mask, other=1.0)
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * C + cols, (x - mean) / tl.sqrt(var + eps) * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _bn_kernel[(x.shape[0],)](x, self.running_mean, self.running_var, self.weight, self.bias, out, x.shape[1],
                                  1e-5, BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
