# kernel-lsp: reference=global_avg_pool.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _global_avg_pool_kernel(x_ptr, out_ptr, C, HW, W, sxn, sxc, sxh, sxw, BLOCK: tl.constexpr):
    """out[n, c] = mean over h, w of x[n, c, h, w]; fp32 accumulation over BLOCK pixels at a time."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, HW, BLOCK):
        p = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + n * sxn + c * sxc + (p // W) * sxh + (p % W) * sxw, mask=p < HW, other=0.0).to(tl.float32)
    tl.store(out_ptr + plane, (tl.sum(acc, axis=0) / HW).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        out = torch.empty((n, c), dtype=x.dtype, device=x.device)
        block = min(1024, triton.next_power_of_2(h * w))
        _global_avg_pool_kernel[(n * c,)](x, out, c, h * w, w, x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                                          BLOCK=block)
        return out
