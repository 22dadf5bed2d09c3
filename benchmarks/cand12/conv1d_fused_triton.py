# kernel-lsp: reference=../../tasks/Convolution/conv1d.py
"""Candidate for tasks/Convolution/conv1d_triton.py (issue 28), not yet timed: the same three TF32 products per
step (w_hi x_lo + w_lo x_hi + w_hi x_hi, fp32 accuracy), but x is made channels-last once in fp32 and split into
hi and lo in registers, inside the loop, instead of by a pass that writes both halves (half the bytes written
and read back: 134 MB, not 268 MB, at the task's size). The output is computed transposed, out^T[l, o] =
sum x[l, c] w[c, o], so the split x is the dot's first operand, which Hopper's wgmma takes from registers; the
weights, split once (they are small), are the second, contiguous along the reduction."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BL, BO, BC, WARPS, STAGES = 128, 128, 16, 8, 3
TB_L, TB_C = 64, 64


@triton.jit
def _tf32(v):
    """v rounded to the nearest TF32 value (10 mantissa bits) on its bits; a value that would round past the
    largest float is truncated instead; infinities and NaN are kept."""
    bits = v.to(tl.int32, bitcast=True)
    rounded = (bits + 0x1000) & -8192
    out = tl.where((rounded & 0x7F800000) == 0x7F800000, bits & -8192, rounded).to(tl.float32, bitcast=True)
    return tl.where(v != v, v, out)


@triton.jit
def _channels_last(x_ptr, y_ptr, C, L, sxb, sxc, sxl, BLK_L: tl.constexpr, BLK_C: tl.constexpr):
    """y[b, l, c] = x[b, c, l]."""
    b = tl.program_id(2).to(tl.int64)
    rl = tl.program_id(0) * BLK_L + tl.arange(0, BLK_L)
    rc = tl.program_id(1) * BLK_C + tl.arange(0, BLK_C)
    m = (rc[:, None] < C) & (rl[None, :] < L)
    v = tl.load(x_ptr + b * sxb + rc[:, None] * sxc + rl[None, :] * sxl, mask=m)
    tl.store(y_ptr + b * L * C + rl[None, :] * C + rc[:, None], v, mask=m)


@triton.jit
def _split_weights(w_ptr, hi_ptr, lo_ptr, O, C, KS, swo, swc, swk, BLOCK: tl.constexpr):
    """hi[k, o, c] + lo[k, o, c] = w[o, c, k] to about 2^-21, both TF32 values and of the weight's sign (hi is w
    truncated, not rounded), so that an infinite input times hi and times lo are infinities of one sign; a zero lo
    of a nonzero weight becomes the smallest normal float of its sign (not inf * 0 = NaN), which adds under 1e-37
    to a finite output."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    n = O * C * KS
    c = i % C
    o = (i // C) % O
    k = i // (C * O)
    v = tl.load(w_ptr + o * swo + c * swc + k * swk, mask=i < n)
    hi = (v.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    lo = _tf32(v - hi)
    tiny = tl.where(hi > 0, 1.1754943508222875e-38, -1.1754943508222875e-38)
    lo = tl.where((lo == 0.0) & (hi != 0.0), tiny, lo)
    tl.store(hi_ptr + i, hi, mask=i < n)
    tl.store(lo_ptr + i, lo, mask=i < n)


@triton.jit
def _conv1d_kernel(x_ptr, wh_ptr, wl_ptr, b_ptr, out_ptr, C_in, C_out, L, L_out, KS,
                   BL: tl.constexpr, BO: tl.constexpr, BC: tl.constexpr, STAGES: tl.constexpr):
    """out[b, o, l] = bias[o] + sum_{k, c} x[b, l + k, c] w[k, o, c], as out^T tiles [BL, BO]; x (channels-last
    fp32) split into TF32 hi + lo in registers (lo is 0 where x is a TF32 value or infinite)."""
    b = tl.program_id(2).to(tl.int64)
    rl = tl.program_id(0) * BL + tl.arange(0, BL)
    ro = tl.program_id(1) * BO + tl.arange(0, BO)
    rc = tl.arange(0, BC)
    acc = tl.zeros((BL, BO), dtype=tl.float32)
    n_c = tl.cdiv(C_in, BC)
    for i in tl.range(0, KS * n_c, num_stages=STAGES):
        k = i // n_c
        c = (i - k * n_c) * BC
        x_off = b * L * C_in + (rl[:, None] + k) * C_in + (c + rc)[None, :]
        x_m = (rl[:, None] < L_out) & ((c + rc)[None, :] < C_in)
        w_off = k * C_out * C_in + ro[None, :] * C_in + (c + rc)[:, None]
        w_m = ((c + rc)[:, None] < C_in) & (ro[None, :] < C_out)
        x = tl.load(x_ptr + x_off, mask=x_m, other=0.0)
        w_hi = tl.load(wh_ptr + w_off, mask=w_m, other=0.0)
        w_lo = tl.load(wl_ptr + w_off, mask=w_m, other=0.0)
        x_hi = _tf32(x)
        x_lo = _tf32(tl.where(x_hi == x, 0.0, x - x_hi))
        acc = tl.dot(x_lo, w_hi, acc, input_precision="tf32")
        acc = tl.dot(x_hi, w_lo, acc, input_precision="tf32")
        acc = tl.dot(x_hi, w_hi, acc, input_precision="tf32")
    acc += tl.load(b_ptr + ro, mask=ro < C_out, other=0.0)[None, :]
    tl.store(out_ptr + b * C_out * L_out + ro[None, :] * L_out + rl[:, None], acc,
             mask=(rl[:, None] < L_out) & (ro[None, :] < C_out))


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, c_in, length = x.shape
        w = self.conv.weight
        c_out, _, ks = w.shape
        l_out = length - ks + 1
        x_cl = torch.empty((batch, length, c_in), dtype=x.dtype, device=x.device)
        _channels_last[(triton.cdiv(length, TB_L), triton.cdiv(c_in, TB_C), batch)](
            x, x_cl, c_in, length, x.stride(0), x.stride(1), x.stride(2), BLK_L=TB_L, BLK_C=TB_C)
        w_hi = torch.empty((ks, c_out, c_in), dtype=w.dtype, device=w.device)
        w_lo = torch.empty_like(w_hi)
        _split_weights[(triton.cdiv(w.numel(), 1024),)](w, w_hi, w_lo, c_out, c_in, ks, w.stride(0), w.stride(1),
                                                        w.stride(2), BLOCK=1024)
        out = torch.empty((batch, c_out, l_out), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(l_out, BL), triton.cdiv(c_out, BO), batch)
        _conv1d_kernel[grid](x_cl, w_hi, w_lo, self.conv.bias, out, c_in, c_out, length, l_out, ks,
                             BL=BL, BO=BO, BC=BC, STAGES=STAGES, num_warps=WARPS, num_stages=STAGES)
        return out
