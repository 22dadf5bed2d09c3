import torch
import torch.nn as nn


class Model(nn.Module):
    """Leaky ReLU, slope 0.01 (NaN kept), elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=0.01)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return 2 * batch_size * dim
