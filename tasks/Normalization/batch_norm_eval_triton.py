# kernel-lsp: reference=batch_norm_eval.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK, WARPS = 512, 2  # of the flat kernel


@triton.jit
def _batch_norm_kernel(x_ptr, mean_ptr, var_ptr, weight_ptr, bias_ptr, out_ptr, C, HW, sn, sc, sh, sw, W, eps,
                       BLOCK: tl.constexpr, CONTIGUOUS: tl.constexpr):
    """out[n, c, h, w] = (x[n, c, h, w] - mean[c]) * weight[c] / sqrt(var[c] + eps) + bias[c]: the per-channel
    scale is computed by each program from the four statistics (no extra launches before the kernel)."""
    plane = tl.program_id(0).to(tl.int64)
    n = plane // C
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    if CONTIGUOUS:
        src = x_ptr + n * sn + c * sc + offs
    else:
        src = x_ptr + n * sn + c * sc + (offs // W) * sh + (offs % W) * sw
    x = tl.load(src, mask=mask).to(tl.float32)
    mean = tl.load(mean_ptr + c).to(tl.float32)
    scale = tl.load(weight_ptr + c).to(tl.float32) / tl.sqrt_rn(tl.load(var_ptr + c).to(tl.float32) + eps)
    shift = tl.load(bias_ptr + c).to(tl.float32)
    tl.store(out_ptr + plane * HW + offs, ((x - mean) * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _batch_norm_flat_kernel(x_ptr, mean_ptr, var_ptr, weight_ptr, bias_ptr, out_ptr, n, eps, C: tl.constexpr,
                            HW: tl.constexpr, BLOCK: tl.constexpr):
    """The same over a contiguous input (fewer than 2**31 elements) as one flat run, as Inductor's code does. C and
    HW are compile-time constants, so the compiler sees that a block lies in one channel when HW is a multiple of
    BLOCK and loads its statistics once, with shifts for the channel index when they are powers of two."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    c = (i // HW) % C
    x = tl.load(x_ptr + i, mask=mask).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=mask, eviction_policy="evict_last").to(tl.float32)
    var = tl.load(var_ptr + c, mask=mask, eviction_policy="evict_last").to(tl.float32)
    weight = tl.load(weight_ptr + c, mask=mask, eviction_policy="evict_last").to(tl.float32)
    shift = tl.load(bias_ptr + c, mask=mask, eviction_policy="evict_last").to(tl.float32)
    scale = weight / tl.sqrt_rn(var + eps)
    tl.store(out_ptr + i, ((x - mean) * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1.0, 0.1)
            self.bn.bias.normal_(0.0, 0.1)
        self.bn.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        bn = self.bn
        out = torch.empty((n, c, h, w), dtype=x.dtype, device=x.device)
        if x.is_contiguous() and x.numel() < 2**31:
            total = x.numel()
            _batch_norm_flat_kernel[(triton.cdiv(total, BLOCK),)](x, bn.running_mean, bn.running_var, bn.weight,
                                                                  bn.bias, out, total, float(bn.eps), C=c, HW=h * w,
                                                                  BLOCK=BLOCK, num_warps=WARPS)
            return out
        block = min(1024, triton.next_power_of_2(h * w))
        contiguous = x.stride(3) == 1 and x.stride(2) == w
        grid = (n * c, triton.cdiv(h * w, block))
        _batch_norm_kernel[grid](x, bn.running_mean, bn.running_var, bn.weight, bn.bias, out, c, h * w, x.stride(0),
                                 x.stride(1), x.stride(2), x.stride(3), w, float(bn.eps), BLOCK=block,
                                 CONTIGUOUS=contiguous, num_warps=8)
        return out
