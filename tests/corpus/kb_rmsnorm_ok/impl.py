# expect: clean
# class: correct KernelBench RMSNorm with a parameter built in __init__
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_xr, stride_xc, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xr + cols * stride_xc, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x / rms * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))
        self.eps = eps

    def forward(self, x):
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        _rmsnorm_kernel[(rows,)](x, self.weight, out, cols, x.stride(0), x.stride(1), self.eps,
                                 BLOCK=triton.next_power_of_2(cols))
        return out
