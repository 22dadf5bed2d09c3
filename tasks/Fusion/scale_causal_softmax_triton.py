# kernel-lsp: reference=scale_causal_softmax.py bytes=bytes_moved
import torch
import torch.nn as nn
import triton
import triton.language as tl

# Columns per step of a row's walk and warps per row (one row per program), and the granule (elements) that the
# read of a row's kept part is rounded up to, so its loads are whole 16-byte vectors (a multiple of 8 fp16).
CHUNK, WARPS, VEC = 512, 1, 16


@triton.jit
def _causal_softmax_chunked_kernel(s_ptr, out_ptr, n_q, n_k, sh, sq, sk, scale, CHUNK: tl.constexpr,
                                   VEC: tl.constexpr):
    """Row (h, i) of softmax over j <= i of scale * s[h, i, j], entries j > i being 0, walked in chunks: pass 1
    keeps a running maximum m and sum s of exp(x - m) over the kept entries (read rounded up to VEC, the extra
    entries masked to -inf); pass 2 reads them again (cache hits) and writes exp(x - m) / s; the chunks past i are
    written as zeros (NaN when s is NaN: a NaN or +inf in the row, or a row of -inf, as softmax gives) and never
    read. Only the kept half of a causal row costs reads and arithmetic."""
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
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # a chunk of -inf adds 0, not exp(-inf + inf)
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
        _causal_softmax_chunked_kernel[(h * q,)](scores, out, q, k, scores.stride(0), scores.stride(1),
                                                 scores.stride(2), self.scale, CHUNK=CHUNK, VEC=VEC, num_warps=WARPS)
        return out
