# kernel-lsp: reference=max_pool1d.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
        best = tl.where((x > best) | (x != x), x, best)
    tl.store(out_ptr + row * L_out + j, best, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, length = x.shape
        l_out = (length - 4) // 2 + 1
        out = torch.empty((b, c, l_out), dtype=x.dtype, device=x.device)
        block = min(1024, triton.next_power_of_2(l_out))
        _max_pool1d_kernel[(b * c, triton.cdiv(l_out, block))](x, out, c, length, l_out, x.stride(0), x.stride(1),
                                                              x.stride(2), KS=4, STRIDE=2, BLOCK=block)
        return out
