import torch
import torch.nn as nn


class Model(nn.Module):
    """A square linear layer: in_features and out_features are both 96, and get_init_inputs gives literals."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(40, 96)]


def get_init_inputs():
    return [96, 96]
