import torch
import torch.nn as nn


class Model(nn.Module):
    """1x1 convolution (channel mixing) with bias, fp16 NCHW."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, self.conv.weight.to(x.dtype), self.conv.bias.to(x.dtype))


batch_size = 32
in_channels = 256
out_channels = 256
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width, dtype=torch.float16)]


def get_init_inputs():
    return [in_channels, out_channels]


def flops():
    return 2 * batch_size * out_channels * in_channels * height * width
