import torch
import torch.nn as nn


class Model(nn.Module):
    """Global average pooling over H and W (AdaptiveAvgPool2d(1) then flatten), bf16 NCHW."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float().mean(dim=(2, 3)).to(x.dtype)


batch_size = 256
channels = 512
height = 56
width = 56


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return []


def flops():
    return batch_size * channels * height * width
