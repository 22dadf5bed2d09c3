import torch
import torch.nn as nn


class Model(nn.Module):
    """A batch norm the model puts in eval mode itself as built (running statistics in every mode), then ReLU."""

    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels)
        self.bn.eval()
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(x))


channels = 96


def get_inputs():
    return [torch.randn(32, channels)]


def get_init_inputs():
    return [channels]
