# kernel-lsp: reference=scale_causal_softmax.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

WIDTH_PER_WARP = 2048  # columns of a row per warp


@triton.jit
def _causal_softmax_row_kernel(s_ptr, out_ptr, n_q, n_k, sh, sq, sk, scale, BLOCK: tl.constexpr):
    """Row (h, i), whole in registers (BLOCK >= n_k, as Triton's softmax tutorial does): softmax over j <= i of
    scale * s[h, i, j]; entries j > i are 0. The row is read once, and only its first i + 1 entries: the masked
    part of a causal row costs no memory traffic."""
    pid = tl.program_id(0).to(tl.int64)
    h = pid // n_q
    i = pid % n_q
    c = tl.arange(0, BLOCK)
    keep = (c <= i) & (c < n_k)
    x = tl.load(s_ptr + h * sh + i * sq + c * sk, mask=keep, other=0.0, eviction_policy="evict_first")
    x = tl.where(keep, x.to(tl.float32) * scale, -float("inf"))
    top = tl.max(x, axis=0)
    e = tl.where(keep, tl.exp(x - top), 0.0)
    total = tl.sum(e, axis=0)
    # Masked entries are 0, or NaN when the row has a NaN, as softmax over -inf and NaN gives.
    p = tl.where(keep, e / total, 0.0 * total)
    tl.store(out_ptr + pid * n_k + c, p.to(out_ptr.dtype.element_ty), mask=c < n_k)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        h, q, k = scores.shape
        out = torch.empty((h, q, k), dtype=scores.dtype, device=scores.device)
        args = (scores, out, q, k, scores.stride(0), scores.stride(1), scores.stride(2), self.scale)
        width = triton.next_power_of_2(k)
        _causal_softmax_row_kernel[(h * q,)](*args, BLOCK=width, num_warps=min(16, max(1, width // WIDTH_PER_WARP)))
        return out
