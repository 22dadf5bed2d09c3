import torch
import torch.nn as nn


class Model(nn.Module):
    """One RMSprop step (alpha 0.99, eps 1e-8, no momentum), returning new parameter and square average. bf16
    parameters and gradients with an fp32 square average, as mixed-precision training keeps it."""

    def __init__(self, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__()
        self.lr, self.alpha, self.eps = lr, alpha, eps

    def forward(self, param, grad, sq):
        g = grad.float()
        sq_new = self.alpha * sq + (1 - self.alpha) * g * g
        p_new = param.float() - self.lr * g / (torch.sqrt(sq_new) + self.eps)
        return p_new.to(param.dtype), sq_new


n_params = 1 << 26


def get_inputs():
    return [torch.randn(n_params, dtype=torch.bfloat16), torch.randn(n_params, dtype=torch.bfloat16),
            torch.rand(n_params)]


def get_init_inputs():
    return []


def flops():
    return 8 * n_params
