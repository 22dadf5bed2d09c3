import torch
import torch.nn as nn


class Model(nn.Module):
    """Outer product of two vectors, scaled: out = alpha * u v^T, fp32."""

    def __init__(self, alpha: float = 0.5):
        super().__init__()
        self.alpha = alpha

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.alpha * torch.outer(u, v)


M = 16384
N = 8192


def get_inputs():
    return [torch.randn(M), torch.randn(N)]


def get_init_inputs():
    return []


def flops():
    return 2 * M * N
