import torch
import torch.nn as nn


class Model(nn.Module):
    """One Adam step (bias-corrected, step t = 10), returning new parameter, first and second moments. fp32."""

    def __init__(self, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, step: int = 10):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.step = lr, beta1, beta2, eps, step

    def forward(self, param, grad, m, v):
        m_new = self.beta1 * m + (1 - self.beta1) * grad
        v_new = self.beta2 * v + (1 - self.beta2) * grad * grad
        m_hat = m_new / (1 - self.beta1 ** self.step)
        v_hat = v_new / (1 - self.beta2 ** self.step)
        return param - self.lr * m_hat / (torch.sqrt(v_hat) + self.eps), m_new, v_new


n_params = 1 << 26


def get_inputs():
    return [torch.randn(n_params), torch.randn(n_params), 0.1 * torch.randn(n_params), torch.rand(n_params) * 0.01]


def get_init_inputs():
    return []


def flops():
    return 12 * n_params
