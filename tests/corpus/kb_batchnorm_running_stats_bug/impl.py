# expect: KL200
# class: a batch norm that always normalizes with the running statistics: right in eval mode, wrong in the module's
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
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        bn = self.bn
        _bn_kernel[(x.shape[0],)](x, bn.running_mean, bn.running_var, bn.weight, bn.bias, out, x.shape[1], bn.eps,
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
