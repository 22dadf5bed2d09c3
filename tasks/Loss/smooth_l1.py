import torch
import torch.nn as nn


class Model(nn.Module):
    """Smooth L1 (Huber-like) loss with beta = 1.0, reduction none, fp16."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.smooth_l1_loss(pred, target, reduction="none", beta=1.0)


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16), torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return 4 * batch_size * dim
