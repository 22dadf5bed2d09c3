import torch
import torch.nn as nn


class Model(nn.Module):
    """Reverse the last dimension: torch.flip(x, dims=[-1]), fp32."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(x, dims=[-1])


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


def flops():
    return 0
