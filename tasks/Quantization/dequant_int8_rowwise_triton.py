# kernel-lsp: reference=dequant_int8_rowwise.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_CAP, WARPS, STAGES = 8192, 16, 1  # columns per program


@triton.jit
def _dequant_kernel(q_ptr, s_ptr, y_ptr, n_cols, sqr, sqc, BLOCK: tl.constexpr):
    """y[r, c] = fp16(q[r, c] * scale[r]), the product in fp32."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    q = tl.load(q_ptr + row * sqr + cols * sqc, mask=mask, other=0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (q * tl.load(s_ptr + row)).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        rows, cols = q.shape
        y = torch.empty((rows, cols), dtype=torch.float16, device=q.device)
        block = min(BLOCK_CAP, triton.next_power_of_2(cols))
        _dequant_kernel[(rows, triton.cdiv(cols, block))](q, scale.contiguous(), y, cols, q.stride(0), q.stride(1),
                                                         BLOCK=block, num_warps=WARPS, num_stages=STAGES)
        return y
