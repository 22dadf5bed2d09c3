import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B in fp32 (IEEE, no TF32)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


M = 4096
N = 4096
K = 4096


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float32), torch.randn(K, N, dtype=torch.float32)]


def get_init_inputs():
    return []


def flops():
    return 2 * M * N * K
