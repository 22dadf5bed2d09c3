import torch
import torch.nn as nn

batch_size = 32
features = 48


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, features) * 2.0 + 0.5]


def get_init_inputs():
    return [features]
