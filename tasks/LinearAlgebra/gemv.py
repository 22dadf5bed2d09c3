import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product y = A @ x, fp32."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return a @ x


M = 16384
K = 8192


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []


def flops():
    return 2 * M * K
