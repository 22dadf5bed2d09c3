import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B in fp16 with fp32 accumulation."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


M = 8192
N = 8192
K = 8192


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return 2 * M * N * K
