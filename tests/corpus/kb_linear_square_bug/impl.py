# expect: KL200 KL208
# class: a size used where another equal size belongs
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        # the weight is (N, K): its row stride is K, but N is used
        w = tl.load(w_ptr + rn[None, :] * N + (k + rk)[:, None], mask=(rn[None, :] < N) & ((k + rk)[:, None] < K),
                    other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        m, k = x.shape
        n = self.linear.weight.shape[0]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
        _linear_kernel[grid](x, self.linear.weight, self.linear.bias, out, m, n, k, BM=32, BN=32, BK=32)
        return out
