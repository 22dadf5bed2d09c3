# kernel-lsp: reference=scale_causal_softmax.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _causal_softmax_kernel(s_ptr, out_ptr, n_q, n_k, sh, sq, sk, scale, BLOCK: tl.constexpr):
    """Row (h, i): softmax over j <= i of scale * s[h, i, j]; entries j > i are 0."""
    pid = tl.program_id(0).to(tl.int64)
    h = pid // n_q
    i = pid % n_q
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_k, BLOCK):
        c = start + cols
        keep = (c <= i) & (c < n_k)
        x = tl.load(s_ptr + h * sh + i * sq + c * sk, mask=keep, other=0.0).to(tl.float32) * scale
        x = tl.where(keep, x, -float("inf"))
        new_m = tl.maximum(m, x)
        safe = tl.where(new_m == -float("inf"), 0.0, new_m)
        acc = acc * tl.exp(m - safe) + tl.exp(x - safe)
        m = new_m
    top = tl.max(m, axis=0)
    total = tl.sum(acc * tl.exp(m - top), axis=0)
    for start in range(0, n_k, BLOCK):
        c = start + cols
        keep = (c <= i) & (c < n_k)
        x = tl.load(s_ptr + h * sh + i * sq + c * sk, mask=keep, other=0.0).to(tl.float32) * scale
        # Masked entries are 0, or NaN when the row has a NaN, as softmax over -inf and NaN gives.
        p = tl.where(keep, tl.exp(x - top) / total, 0.0 * total)
        tl.store(out_ptr + pid * n_k + c, p.to(out_ptr.dtype.element_ty), mask=c < n_k)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        h, q, k = scores.shape
        out = torch.empty((h, q, k), dtype=scores.dtype, device=scores.device)
        _causal_softmax_kernel[(h * q,)](scores, out, q, k, scores.stride(0), scores.stride(1), scores.stride(2),
                                         self.scale, BLOCK=min(1024, triton.next_power_of_2(k)), num_warps=4)
        return out
