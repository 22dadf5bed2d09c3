import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension of a bf16 matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return []


def flops():
    return batch_size * dim
