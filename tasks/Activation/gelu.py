import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU (erf form), elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float32)]


def get_init_inputs():
    return []


def flops():
    return 8 * batch_size * dim
