import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 64
features = 256


class Model(nn.Module):
    """GELU then dropout written as a function of the module's mode, as many transformer blocks do:
    `F.dropout(x, p, self.training)` draws in training mode, PyTorch's default, and passes x through in eval mode."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(F.gelu(x), self.p, self.training)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [0.2]
