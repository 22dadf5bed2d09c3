# expect: KL200
# class: a linear layer whose batch-of-one path (a vector-matrix product, as a decode step takes) drops the bias
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, HAS_BIAS: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BN,), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row * N + cols, acc, mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.out_features
        out = torch.empty(M, N, dtype=x.dtype, device=x.device)
        grid = (M, triton.cdiv(N, 32))
        # One row: the vector path, which forgets the bias.
        _linear_kernel[grid](x, self.linear.weight, self.linear.bias, out, M, N, K, HAS_BIAS=M > 1, BN=32, BK=32)
        return out
