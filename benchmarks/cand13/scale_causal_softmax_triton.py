# kernel-lsp: reference=../../tasks/Fusion/scale_causal_softmax.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

# Columns of a row per warp, rows per program, and the granule (elements) that a row's read is rounded up to, so
# the loads of a row's kept part vectorize (8 fp16 = 16 bytes); 1 reads exactly j <= i, element by element.
# CHUNK > 0: a row is walked in chunks of CHUNK columns by CHUNK_WARPS warps instead (an online max and sum over the
# kept part, then a second pass that writes it; the masked part is only stored, as zeros): no work on the masked half.
WIDTH_PER_WARP, ROWS, VEC, CHUNK, CHUNK_WARPS = 2048, 2, 8, 0, 1


@triton.jit
def _causal_softmax_rows_kernel(s_ptr, out_ptr, n_q, n_k, sh, sq, sk, scale, BLOCK: tl.constexpr,
                                ROWS: tl.constexpr, VEC: tl.constexpr):
    """ROWS rows (h, i) of one head, each whole in registers (BLOCK >= n_k): softmax over j <= i of
    scale * s[h, i, j]; entries j > i are 0. A row is read once, and only up to its first i + 1 entries rounded up
    to VEC: the masked part of a causal row costs (almost) no memory traffic, and the read is whole 16-byte
    vectors. The extra entries read are masked to -inf before use."""
    blocks = tl.cdiv(n_q, ROWS)
    h = (tl.program_id(0) // blocks).to(tl.int64)
    i = (tl.program_id(0) % blocks) * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, BLOCK)
    live = i < n_q
    reach = tl.multiple_of((i // VEC + 1) * VEC, VEC)  # read c < reach: covers c <= i, a whole number of granules
    rd = (c[None, :] < reach[:, None]) & (c[None, :] < n_k) & live[:, None]
    keep = (c[None, :] <= i[:, None]) & (c[None, :] < n_k) & live[:, None]
    x = tl.load(s_ptr + h * sh + i[:, None].to(tl.int64) * sq + c[None, :] * sk, mask=rd, other=0.0,
                eviction_policy="evict_first")
    x = tl.where(keep, x.to(tl.float32) * scale, -float("inf"))
    top = tl.max(x, axis=1)
    e = tl.where(keep, tl.exp(x - top[:, None]), 0.0)
    total = tl.sum(e, axis=1)
    # Masked entries are 0, or NaN when the row has a NaN, as softmax over -inf and NaN gives.
    inv = 1.0 / total
    p = tl.where(keep, e * inv[:, None], 0.0 * inv[:, None])
    rows = h * n_q + i.to(tl.int64)
    tl.store(out_ptr + rows[:, None] * n_k + c[None, :], p.to(out_ptr.dtype.element_ty),
             mask=(c[None, :] < n_k) & live[:, None])


@triton.jit
def _causal_softmax_chunked_kernel(s_ptr, out_ptr, n_q, n_k, sh, sq, sk, scale, CHUNK: tl.constexpr,
                                   VEC: tl.constexpr):
    """Row (h, i) in chunks: pass 1 keeps a running maximum m and sum s of exp(x - m) over the kept entries
    j <= i (read rounded up to VEC, the extra entries masked to -inf); pass 2 reads them again (cache hits) and
    writes exp(x - m) / s; the chunks past i are written as zeros (NaN when s is NaN: a NaN or +inf in the row,
    or a row of -inf, as softmax gives) and never read."""
    pid = tl.program_id(0).to(tl.int64)
    h = pid // n_q
    i = pid % n_q
    base = s_ptr + h * sh + i * sq
    obase = out_ptr + pid * n_k
    c = tl.arange(0, CHUNK)
    n_keep = tl.minimum(i + 1, n_k)
    reach = tl.multiple_of((i // VEC + 1) * VEC, VEC)
    m = tl.full((), -float("inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    for c0 in range(0, n_keep, CHUNK):
        cc = c0 + c
        x = tl.load(base + cc * sk, mask=(cc < reach) & (cc < n_k), other=0.0).to(tl.float32) * scale
        x = tl.where(cc < n_keep, x, -float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.sum(tl.exp(x - safe), axis=0)
        m = m_new
    safe = tl.where(m == -float("inf"), 0.0, m)
    inv = 1.0 / s
    last = (n_keep + CHUNK - 1) // CHUNK * CHUNK
    for c0 in range(0, last, CHUNK):
        cc = c0 + c
        x = tl.load(base + cc * sk, mask=(cc < reach) & (cc < n_k), other=0.0).to(tl.float32) * scale
        p = tl.where(cc < n_keep, tl.exp(x - safe) * inv, 0.0 * inv)
        tl.store(obase + cc, p.to(out_ptr.dtype.element_ty), mask=cc < n_k)
    zero = (tl.zeros((CHUNK,), tl.float32) * inv).to(out_ptr.dtype.element_ty)
    for c0 in range(last, n_k, CHUNK):
        cc = c0 + c
        tl.store(obase + cc, zero, mask=cc < n_k)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        h, q, k = scores.shape
        out = torch.empty((h, q, k), dtype=scores.dtype, device=scores.device)
        if CHUNK > 0:
            _causal_softmax_chunked_kernel[(h * q,)](scores, out, q, k, scores.stride(0), scores.stride(1),
                                                     scores.stride(2), self.scale, CHUNK=CHUNK, VEC=VEC,
                                                     num_warps=CHUNK_WARPS)
            return out
        width = triton.next_power_of_2(k)
        rows = min(ROWS, triton.next_power_of_2(max(q, 1)))
        warps = min(16, max(1, rows * width // WIDTH_PER_WARP))
        _causal_softmax_rows_kernel[(h * triton.cdiv(q, rows),)](
            scores, out, q, k, scores.stride(0), scores.stride(1), scores.stride(2), self.scale, BLOCK=width,
            ROWS=rows, VEC=VEC, num_warps=warps)
        return out
