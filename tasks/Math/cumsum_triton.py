# kernel-lsp: reference=cumsum.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    """out[r, c] = sum_{k<=c} x[r, k]: a tile-wise scan with a running carry between tiles."""
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * n_cols + cols, s.to(out_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        _cumsum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=min(1024, triton.next_power_of_2(cols)), num_warps=4)
        return out
