import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix multiply C[b] = A[b] @ B[b], fp16 with fp32 accumulation."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch = 64
M = 1024
N = 1024
K = 512


def get_inputs():
    return [torch.randn(batch, M, K, dtype=torch.float16), torch.randn(batch, K, N, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return 2 * batch * M * N * K
