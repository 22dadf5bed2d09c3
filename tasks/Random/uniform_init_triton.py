# kernel-lsp: reference=uniform_init.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _uniform_kernel(out_ptr, n, seed, bound, BLOCK: tl.constexpr):
    """out[i] = (2 * rand(seed, i) - 1) * bound, uniform on [-bound, bound)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (tl.rand(seed, offs) * 2.0 - 1.0) * bound, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.rows, self.cols = rows, cols
        self.register_buffer("anchor", torch.empty(0))

    def forward(self, seed: int) -> torch.Tensor:
        out = torch.empty((self.rows, self.cols), dtype=torch.float32, device=self.anchor.device)
        n = out.numel()
        _uniform_kernel[(triton.cdiv(n, 1024),)](out, n, int(seed), (6.0 / self.cols) ** 0.5, BLOCK=1024)
        return out
