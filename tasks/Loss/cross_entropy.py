import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross-entropy of logits against integer class targets, mean over the batch."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(logits, target)


batch_size = 16384
num_classes = 4096


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []


def flops():
    return 4 * batch_size * num_classes
