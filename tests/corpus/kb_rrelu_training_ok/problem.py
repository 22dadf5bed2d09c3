import torch
import torch.nn as nn


class Model(nn.Module):
    """Randomized leaky ReLU, then a scale."""

    def __init__(self, scale):
        super().__init__()
        self.act = nn.RReLU()
        self.scale = scale

    def forward(self, x):
        return self.act(x) * self.scale


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [2.0]
