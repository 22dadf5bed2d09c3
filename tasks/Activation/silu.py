import torch
import torch.nn as nn


class Model(nn.Module):
    """SiLU / swish, elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return []


def flops():
    return 4 * batch_size * dim
