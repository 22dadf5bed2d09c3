# kernel-lsp: reference=upsample_nearest2x.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _upsample2x_kernel(x_ptr, out_ptr, C, H, W, sxn, sxc, sxh, sxw, BLOCK: tl.constexpr):
    """out[n, c, i, j] = x[n, c, i // 2, j // 2] for one output row i per program axis 1."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    i = tl.program_id(1)
    j = tl.program_id(2) * BLOCK + tl.arange(0, BLOCK)
    mask = j < 2 * W
    vals = tl.load(x_ptr + n * sxn + c * sxc + (i // 2) * sxh + (j // 2) * sxw, mask=mask)
    tl.store(out_ptr + plane * 4 * H * W + i * 2 * W + j, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        out = torch.empty((n, c, 2 * h, 2 * w), dtype=x.dtype, device=x.device)
        block = min(1024, triton.next_power_of_2(2 * w))
        _upsample2x_kernel[(n * c, 2 * h, triton.cdiv(2 * w, block))](x, out, c, h, w, x.stride(0), x.stride(1),
                                                                     x.stride(2), x.stride(3), BLOCK=block)
        return out
