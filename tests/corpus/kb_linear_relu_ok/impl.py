# expect: clean
# class: correct fused linear + bias + relu + scale, fp32 with ieee dot
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk, som, scale,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * sxm + (k + rk)[None, :] * sxk,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + (k + rk)[:, None] * swk,
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    y = tl.where(acc + bias[None, :] < 0, 0.0, acc + bias[None, :]) * scale
    tl.store(out_ptr + rm[:, None] * som + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        m, k = x.shape
        n = self.linear.weight.shape[0]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        w = self.linear.weight
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
        _linear_relu_kernel[grid](x, w, self.linear.bias, out, m, n, k, x.stride(0), x.stride(1),
                                  w.stride(0), w.stride(1), out.stride(0), float(self.scale), BM=32, BN=32, BK=32)
        return out
