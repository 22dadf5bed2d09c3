# kernel-lsp: reference=cross_entropy.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

WIDTH_PER_WARP = 1024  # columns of a row per warp


@triton.jit
def _ce_row_kernel(x_ptr, t_ptr, loss_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    """loss[r] = logsumexp(x[r]) - x[r, target[r]], the row whole in registers (BLOCK >= n_cols): read once, one
    exp per element."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=cols < n_cols, other=-float("inf"),
                eviction_policy="evict_first").to(tl.float32)
    top = tl.max(x, axis=0)
    safe = tl.where(top == -float("inf"), 0.0, top)
    lse = safe + tl.log(tl.sum(tl.exp(x - safe), axis=0))
    target = tl.load(t_ptr + row)
    picked = tl.load(x_ptr + row * stride_r + target * stride_c).to(tl.float32)
    tl.store(loss_ptr + row, lse - picked)


@triton.jit
def _mean_kernel(v_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(v_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        rows, cols = logits.shape
        losses = torch.empty((rows,), dtype=torch.float32, device=logits.device)
        width = triton.next_power_of_2(cols)
        _ce_row_kernel[(rows,)](logits, target.contiguous(), losses, cols, logits.stride(0), logits.stride(1),
                                BLOCK=width, num_warps=min(16, max(1, width // WIDTH_PER_WARP)))
        out = torch.empty((), dtype=logits.dtype, device=logits.device)
        _mean_kernel[(1,)](losses, out, rows, BLOCK=1024)
        return out
