import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear (x W^T + b), GELU (tanh), then scale: three ops, as in KernelBench level 2. fp16."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.linear(x, self.linear.weight.to(x.dtype), self.linear.bias.to(x.dtype))
        return torch.nn.functional.gelu(y, approximate="tanh") * self.scale


batch_size = 8192
in_features = 4096
out_features = 4096
scale = 2


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, out_features, scale]


def flops():
    return 2 * batch_size * in_features * out_features
