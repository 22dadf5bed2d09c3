# kernel-lsp: reference=upsample_nearest2x.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _upsample2x_kernel(x_ptr, out_ptr, C, H, W, sxn, sxc, sxh, sxw, ROWS: tl.constexpr, BW: tl.constexpr):
    """out[n, c, 2i + r, 2j + s] = x[n, c, i, j]: each program reads ROWS input rows once and writes each of them
    twice, widened by interleaving every element with itself (wide, contiguous stores)."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    i = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    j = tl.arange(0, BW)
    mask = (i[:, None] < H) & (j[None, :] < W)
    vals = tl.load(x_ptr + n * sxn + c * sxc + i[:, None] * sxh + j[None, :] * sxw, mask=mask)
    wide = tl.interleave(vals, vals)  # (ROWS, 2 * BW): x[i, 0], x[i, 0], x[i, 1], x[i, 1], ...
    j2 = tl.arange(0, 2 * BW)
    mask2 = (i[:, None] < H) & (j2[None, :] < 2 * W)
    row0 = out_ptr + plane * 4 * H * W + (2 * i[:, None]) * (2 * W) + j2[None, :]
    tl.store(row0, wide, mask=mask2)
    tl.store(row0 + 2 * W, wide, mask=mask2)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        out = torch.empty((n, c, 2 * h, 2 * w), dtype=x.dtype, device=x.device)
        bw = triton.next_power_of_2(w)
        rows = max(1, min(triton.next_power_of_2(h), 4096 // bw))
        _upsample2x_kernel[(n * c, triton.cdiv(h, rows))](x, out, c, h, w, x.stride(0), x.stride(1), x.stride(2),
                                                          x.stride(3), ROWS=rows, BW=bw, num_warps=4)
        return out
