# kernel-lsp: reference=index_add.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _index_add_kernel(src_ptr, idx_ptr, out_ptr, dim, ss_r, ss_c, BLOCK: tl.constexpr):
    """out[idx[i], :] += src[i, :] with atomic adds (rows may repeat; order only changes rounding)."""
    i = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    dst = tl.load(idx_ptr + i)
    vals = tl.load(src_ptr + i * ss_r + cols * ss_c, mask=cols < dim, other=0.0)
    tl.atomic_add(out_ptr + dst * dim + cols, vals, mask=cols < dim)


class ModelNew(nn.Module):
    def __init__(self, n_out: int):
        super().__init__()
        self.n_out = n_out

    def forward(self, src: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        n, dim = src.shape
        out = torch.zeros((self.n_out, dim), dtype=src.dtype, device=src.device)
        block = min(512, triton.next_power_of_2(dim))
        _index_add_kernel[(n, triton.cdiv(dim, block))](src, idx.contiguous(), out, dim, src.stride(0),
                                                      src.stride(1), BLOCK=block)
        return out
