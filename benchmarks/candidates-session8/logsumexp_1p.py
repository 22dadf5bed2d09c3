# kernel-lsp: reference=../../tasks/Math/logsumexp.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

WARPS_PER = 512  # elements per warp


@triton.jit
def _logsumexp_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    """out[r] = m + log(sum exp(x - m)), m the row's maximum, with the whole row read once into registers (one exp
    per element; an online maximum over chunks needs two). +inf rows give +inf, a NaN gives NaN."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    top = tl.max(x, axis=0)
    safe_top = tl.where((top == -float("inf")) | (top == float("inf")), 0.0, top)
    result = safe_top + tl.log(tl.sum(tl.exp(x - safe_top), axis=0))
    result = tl.where(top == float("inf"), float("inf"), result)
    result = tl.where(tl.max((x != x).to(tl.int32), axis=0) > 0, float("nan"), result)
    tl.store(out_ptr + row, result.to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        block = triton.next_power_of_2(cols)
        _logsumexp_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=block,
                                   num_warps=min(32, max(4, block // WARPS_PER)))
        return out
