import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean squared error between predictions and targets (reduction: mean)."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(pred, target)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


def flops():
    return 3 * batch_size * dim
