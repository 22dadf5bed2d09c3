import torch
import torch.nn as nn

batch_size = 64
features = 256


class Model(nn.Module):
    """GELU then dropout, as a transformer block's MLP ends: the dropout acts in training mode, PyTorch's default."""

    def __init__(self, p):
        super().__init__()
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(torch.nn.functional.gelu(x))


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [0.2]
