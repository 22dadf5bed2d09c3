# kernel-lsp: reference=../../tasks/MatrixMultiply/matmul_fp32.py
"""fp32 matmul at fp32's accuracy on the tensor cores, its operands split once: A and B are each rounded to TF32
parts, hi + lo, by a pass of their own, and the product kernel adds three TF32 products per step, a_hi b_hi into
one accumulator and a_lo b_hi + a_hi b_lo into a second. tl.dot's own tf32x3 splits both tiles in registers on
every step, for every tile that reads them, and writes B's parts back to shared memory (the task's kernel: 57
TFLOP/s on an H200, a third of the TF32 rate, 139, being the ceiling of three products).

Infinities and NaN: an infinite x has hi = x and lo = 0, so the correction products can meet inf x 0 = NaN, which
and lo's sign may differ from hi's (inf - inf = NaN): the corrections are added only where they are finite (tl.dot's
tf32x3 drops NaN corrections, step by step), so a NaN or an infinity comes from the hi products, as PyTorch's from
the values."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BM, BN, BK, GROUP, WARPS, STAGES, PERSIST = 128, 128, 32, 8, 8, 3, True
SPLIT_R, SPLIT_C = 32, 128


@triton.jit
def _tf32(v):
    """v rounded to the nearest TF32 value (10 mantissa bits, ties away) on its bits; a value that would round past
    the largest float is truncated instead; infinities and NaN are kept."""
    bits = v.to(tl.int32, bitcast=True)
    rounded = (bits + 0x1000) & -8192
    out = tl.where((rounded & 0x7F800000) == 0x7F800000, bits & -8192, rounded).to(tl.float32, bitcast=True)
    return tl.where(v != v, v, out)


@triton.jit
def _split(x_ptr, hi_ptr, lo_ptr, R, C, Cp, sxr, sxc, BR: tl.constexpr, BC: tl.constexpr):
    """hi + lo = x (R x C, any strides) to about 2^-22 relative, both TF32 values, written contiguous with rows of
    Cp >= C columns (zeros past C, so that TMA's 16-byte row alignment holds); lo is 0 where x is a TF32 value,
    infinite or NaN."""
    rr = tl.program_id(0) * BR + tl.arange(0, BR)
    rc = tl.program_id(1) * BC + tl.arange(0, BC)
    inside = (rr[:, None] < R) & (rc[None, :] < C)
    v = tl.load(x_ptr + rr[:, None].to(tl.int64) * sxr + rc[None, :] * sxc, mask=inside, other=0.0)
    hi = _tf32(v)
    lo = _tf32(tl.where((hi == v) | (hi != hi), 0.0, v - hi))
    offs = rr[:, None].to(tl.int64) * Cp + rc[None, :]
    written = (rr[:, None] < R) & (rc[None, :] < Cp)
    tl.store(hi_ptr + offs, hi, mask=written)
    tl.store(lo_ptr + offs, lo, mask=written)


@triton.jit
def _matmul_split_kernel(ah_desc, al_desc, bh_desc, bl_desc, c_ptr, M, N, K, scm, scn, n_tiles,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                         PROGRAMS: tl.constexpr, FLAT: tl.constexpr):
    """C = A B from the TF32 parts (TMA tiles; past K, M or N they read zeros): `PROGRAMS` programs walk the tiles in
    grouped order, each tile's main and correction accumulators summed at its end."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    in_group = GROUP * num_n
    for tile in tl.range(tl.program_id(0), n_tiles, PROGRAMS, flatten=FLAT):
        first_m = (tile // in_group) * GROUP
        size_m = min(num_m - first_m, GROUP)
        pid_m = first_m + (tile % in_group) % size_m
        pid_n = (tile % in_group) // size_m
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        corr = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a_hi = ah_desc.load([pid_m * BM, k * BK])
            a_lo = al_desc.load([pid_m * BM, k * BK])
            b_hi = bh_desc.load([k * BK, pid_n * BN])
            b_lo = bl_desc.load([k * BK, pid_n * BN])
            corr = tl.dot(a_lo, b_hi, corr, input_precision="tf32")
            corr = tl.dot(a_hi, b_lo, corr, input_precision="tf32")
            acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32")
        out = tl.where(tl.abs(corr) < float("inf"), acc + corr, acc)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + rm[:, None].to(tl.int64) * scm + rn[None, :] * scn, out.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def _parts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x's TF32 parts, contiguous, each row padded to a multiple of 4 columns (16 bytes)."""
    r, c = x.shape
    cp = (c + 3) // 4 * 4
    hi = torch.empty((r, cp), dtype=torch.float32, device=x.device)
    lo = torch.empty_like(hi)
    if r and cp:
        _split[(triton.cdiv(r, SPLIT_R), triton.cdiv(cp, SPLIT_C))](x, hi, lo, r, c, cp, x.stride(0), x.stride(1),
                                                                   BR=SPLIT_R, BC=SPLIT_C)
    return hi, lo


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        if m == 0 or n == 0:
            return c
        if k == 0:
            return c.zero_()
        a_hi, a_lo = _parts(a)
        b_hi, b_lo = _parts(b)
        n_tiles = triton.cdiv(m, BM) * triton.cdiv(n, BN)
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
        programs = min(sms, n_tiles) if PERSIST else n_tiles
        _matmul_split_kernel[(programs,)](
            TensorDescriptor(a_hi, [m, k], [a_hi.stride(0), 1], [BM, BK]),
            TensorDescriptor(a_lo, [m, k], [a_lo.stride(0), 1], [BM, BK]),
            TensorDescriptor(b_hi, [k, n], [b_hi.stride(0), 1], [BK, BN]),
            TensorDescriptor(b_lo, [k, n], [b_lo.stride(0), 1], [BK, BN]),
            c, m, n, k, c.stride(0), c.stride(1), n_tiles, BM=BM, BN=BN, BK=BK, GROUP=GROUP, PROGRAMS=programs,
            FLAT=PERSIST, num_warps=WARPS, num_stages=STAGES)
        return c
