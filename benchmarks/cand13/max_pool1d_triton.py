# kernel-lsp: reference=../../tasks/Pooling/max_pool1d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

# Outputs per program (at most), warps per program, and whether a program's outputs start on a 16-byte boundary of
# the output (ALIGN: the stores vectorize, the loads are 8-byte pairs) or of its row (the loads vectorize).
BLOCK_MAX, WARPS, ALIGN = 2048, 8, False


@triton.jit
def _max2(a, b):
    """max(a, b), NaN-propagating."""
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _pool4(lo, hi, BLOCK: tl.constexpr):
    """lo = x[2j], x[2j+1] and hi = x[2j+2], x[2j+3] for the block's j, flat: the maximum of the four per j."""
    a0, a1 = tl.split(tl.reshape(lo, (BLOCK, 2)))
    b0, b1 = tl.split(tl.reshape(hi, (BLOCK, 2)))
    return _max2(_max2(a0, a1), _max2(b0, b1))


@triton.jit
def _max_pool1d_k4s2_kernel(x_ptr, out_ptr, C, L_out, sxb, sxc, BLOCK: tl.constexpr, ALIGN: tl.constexpr):
    """out[b, c, j] = max(x[2j], x[2j+1], x[2j+2], x[2j+3]) for rows with unit stride. The inputs x[2j .. 2j+1]
    are one contiguous load split into pairs, the next pairs a second load shifted by two (mostly cache hits). A program whose
    outputs lie inside its row runs without masks, so its accesses vectorize; the row's first and last program
    take the masked path."""
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + (row // C) * sxb + (row % C) * sxc
    ostart = row * L_out
    if ALIGN:
        j0 = tl.program_id(1) * BLOCK - (ostart % 4)
    else:
        j0 = (tl.program_id(1) * BLOCK).to(tl.int64)
    j = j0 + tl.arange(0, BLOCK)
    i = 2 * j0 + tl.arange(0, 2 * BLOCK)
    if ALIGN:
        optr = out_ptr + tl.multiple_of(ostart + j0, 4) + tl.arange(0, BLOCK)
    else:
        optr = out_ptr + ostart + j
    if (j0 >= 0) & (j0 + BLOCK <= L_out):
        tl.store(optr, _pool4(tl.load(base + i), tl.load(base + i + 2), BLOCK))
    else:
        inrow = (i >= 0) & (i < 2 * L_out)
        lo = tl.load(base + i, mask=inrow, other=-float("inf"))
        hi = tl.load(base + i + 2, mask=inrow, other=-float("inf"))
        tl.store(optr, _pool4(lo, hi, BLOCK), mask=(j >= 0) & (j < L_out))


@triton.jit
def _max_pool1d_kernel(x_ptr, out_ptr, C, L, L_out, sxb, sxc, sxl, KS: tl.constexpr, STRIDE: tl.constexpr,
                       BLOCK: tl.constexpr):
    """out[b, c, j] = max_{k < KS} x[b, c, j * STRIDE + k]; a NaN in the window gives NaN."""
    row = tl.program_id(0).to(tl.int64)
    b = row // C
    c = row % C
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = j < L_out
    best = tl.full((BLOCK,), -float("inf"), tl.float32)
    for k in range(KS):
        x = tl.load(x_ptr + b * sxb + c * sxc + (j * STRIDE + k) * sxl, mask=mask, other=-float("inf"))
        best = _max2(x, best)
    tl.store(out_ptr + row * L_out + j, best, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, length = x.shape
        l_out = (length - 4) // 2 + 1
        out = torch.empty((b, c, l_out), dtype=x.dtype, device=x.device)
        block = min(BLOCK_MAX, triton.next_power_of_2(l_out))
        if x.stride(2) == 1:
            blocks = triton.cdiv(l_out + (3 if ALIGN else 0), block)
            _max_pool1d_k4s2_kernel[(b * c, blocks)](x, out, c, l_out, x.stride(0), x.stride(1), BLOCK=block,
                                                     ALIGN=ALIGN, num_warps=WARPS)
        else:
            _max_pool1d_kernel[(b * c, triton.cdiv(l_out, block))](x, out, c, length, l_out, x.stride(0),
                                                                   x.stride(1), x.stride(2), KS=4, STRIDE=2,
                                                                   BLOCK=block)
        return out
