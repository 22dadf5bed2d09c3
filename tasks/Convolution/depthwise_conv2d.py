import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 3x3 convolution, padding 1, stride 1, no bias. fp32 NCHW."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
channels = 128
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]


def flops():
    return 2 * 9 * batch_size * channels * height * width
