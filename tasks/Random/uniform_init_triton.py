# kernel-lsp: reference=uniform_init.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK, WARPS = 2048, 2


@triton.jit
def _uniform_kernel(out_ptr, n, seed, bound, BLOCK: tl.constexpr):
    """out[i] = (2 * u - 1) * bound, u uniform on [0, 1): each Philox call gives four numbers (tl.rand4x), for four
    neighbouring elements, a quarter of the generator's work of one tl.rand per element."""
    pid = tl.program_id(0)
    r0, r1, r2, r3 = tl.rand4x(seed, pid * (BLOCK // 4) + tl.arange(0, BLOCK // 4))
    u = tl.reshape(tl.join(tl.join(r0, r1), tl.join(r2, r3)), (BLOCK,))
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (u * 2.0 - 1.0) * bound, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.rows, self.cols = rows, cols
        self.register_buffer("anchor", torch.empty(0))

    def forward(self, seed: int) -> torch.Tensor:
        out = torch.empty((self.rows, self.cols), dtype=torch.float32, device=self.anchor.device)
        n = out.numel()
        _uniform_kernel[(triton.cdiv(n, BLOCK),)](out, n, int(seed), (6.0 / self.cols) ** 0.5, BLOCK=BLOCK,
                                                  num_warps=WARPS)
        return out
