import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B^T in bf16 (a linear layer's weight layout), fp32 accumulation."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b.t()


M = 8192
N = 8192
K = 4096


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(N, K, dtype=torch.bfloat16)]


def get_init_inputs():
    return []


def flops():
    return 2 * M * N * K
