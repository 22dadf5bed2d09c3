import torch
import torch.nn as nn


class Model(nn.Module):
    """Materialized transpose of a matrix: out = x.T (contiguous), fp16."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


rows = 16384
cols = 16384


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return 0
