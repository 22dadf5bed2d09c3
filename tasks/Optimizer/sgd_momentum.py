import torch
import torch.nn as nn


class Model(nn.Module):
    """One SGD step with momentum and weight decay (PyTorch's formula), returning the new parameter and
    momentum buffer instead of updating in place. fp32."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9, weight_decay: float = 1e-4):
        super().__init__()
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay

    def forward(self, param, grad, buf):
        d = grad + self.weight_decay * param
        new_buf = self.momentum * buf + d
        return param - self.lr * new_buf, new_buf


n_params = 1 << 26


def get_inputs():
    return [torch.randn(n_params), torch.randn(n_params), torch.randn(n_params)]


def get_init_inputs():
    return []


def flops():
    return 6 * n_params
