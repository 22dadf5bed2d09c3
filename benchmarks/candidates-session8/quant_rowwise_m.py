# kernel-lsp: reference=../../tasks/Quantization/quant_int8_rowwise.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _round_half_even(v):
    """Round to nearest, ties to even, exactly as torch.round does, for |v| < 2**22 (here |v| <= 127: |x| <= amax):
    adding 1.5 * 2**23 leaves no fraction bits, so the fp32 addition itself rounds v half to even, and subtracting
    it back is exact. Two instructions; a NaN stays NaN."""
    return (v + 12582912.0) - 12582912.0


@triton.jit
def _scale_of(a):
    """max(amax(a), 1e-8) / 127, NaN when a has a NaN (a = |x|, masked lanes 0)."""
    m = tl.max(a, axis=0)
    m = tl.where(tl.max((a != a).to(tl.int32), axis=0) > 0, float("nan"), m)
    # Multiply by fp32(1/127) as the reference does: PyTorch divides by a Python scalar through its
    # reciprocal on the GPU but exactly on the CPU, so the reference is written to be the same on both.
    return tl.where(m < 1e-8, 1e-8, m) * (1.0 / 127.0)


@triton.jit
def _quantized(x, scale):
    return tl.minimum(tl.maximum(_round_half_even(tl.math.div_rn(x, scale)), -128.0), 127.0).to(tl.int8)


@triton.jit
def _quant_rowwise_kernel(x_ptr, q_ptr, s_ptr, n_cols, sxr, sxc, BLOCK: tl.constexpr):
    """One whole row per program, read once: amax (NaN-propagating), scale = max(amax, 1e-8) / 127, then
    q = clamp(rne(x / scale), -128, 127) from the same registers (two passes over the row read it twice)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxr + cols * sxc, mask=mask, other=0.0)
    scale = _scale_of(tl.abs(x))
    tl.store(s_ptr + row, scale)
    tl.store(q_ptr + row * n_cols + cols, _quantized(x, scale), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        rows, cols = x.shape
        q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
        scale = torch.empty((rows,), dtype=x.dtype, device=x.device)
        block = triton.next_power_of_2(cols)
        _quant_rowwise_kernel[(rows,)](x, q, scale, cols, x.stride(0), x.stride(1), BLOCK=block,
                                       num_warps=min(16, max(4, block // 512)))
        return q, scale
