import torch
import torch.nn as nn


class Model(nn.Module):
    """MaxPool1d, kernel 4, stride 2, no padding (NaN propagates as in PyTorch). fp32 NCL."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=4, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 64
channels = 128
length = 16384


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []


def flops():
    return batch_size * channels * ((length - 4) // 2 + 1) * 4
