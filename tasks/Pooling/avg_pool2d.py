import torch
import torch.nn as nn


class Model(nn.Module):
    """AvgPool2d 2x2, stride 2, fp16 NCHW."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.avg_pool2d(x, kernel_size=2, stride=2)


batch_size = 64
channels = 128
height = 256
width = 256


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.float16)]


def get_init_inputs():
    return []


def flops():
    return batch_size * channels * height * width
