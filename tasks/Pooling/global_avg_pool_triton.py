# kernel-lsp: reference=global_avg_pool.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _global_avg_pool_kernel(x_ptr, out_ptr, planes, C, HW, W, sxn, sxc, sxh, sxw, PLANES: tl.constexpr,
                            BLOCK: tl.constexpr, CONTIGUOUS: tl.constexpr):
    """out[n, c] = mean over h, w of x[n, c, h, w], accumulated in fp32. PLANES (n, c) planes per program, BLOCK
    pixels of each at a time; a plane stored contiguously is read as one run (no per-pixel division)."""
    p = tl.program_id(0).to(tl.int64) * PLANES + tl.arange(0, PLANES)
    n = p // C
    c = p % C
    base = n * sxn + c * sxc
    acc = tl.zeros((PLANES, BLOCK), dtype=tl.float32)
    for start in range(0, HW, BLOCK):
        q = start + tl.arange(0, BLOCK)
        mask = (p[:, None] < planes) & (q[None, :] < HW)
        if CONTIGUOUS:
            off = base[:, None] + q[None, :]
        else:
            off = base[:, None] + (q[None, :] // W) * sxh + (q[None, :] % W) * sxw
        acc += tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + p, (tl.sum(acc, axis=1) / HW).to(out_ptr.dtype.element_ty), mask=p < planes)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        out = torch.empty((n, c), dtype=x.dtype, device=x.device)
        block = min(512, triton.next_power_of_2(h * w))
        planes_per = max(1, min(8, 2048 // block))
        contiguous = x.stride(3) == 1 and x.stride(2) == w
        _global_avg_pool_kernel[(triton.cdiv(n * c, planes_per),)](
            x, out, n * c, c, h * w, w, x.stride(0), x.stride(1), x.stride(2), x.stride(3), PLANES=planes_per,
            BLOCK=block, CONTIGUOUS=contiguous, num_warps=4)
        return out
