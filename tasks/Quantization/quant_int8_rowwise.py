import torch
import torch.nn as nn


class Model(nn.Module):
    """Symmetric int8 quantization with one scale per row: scale = amax(|x|) * fp32(1/127), q = round_half_even(x / scale)
    saturated to [-128, 127]. Returns (q, scale). Exact integer semantics: the test of this category."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        scale = x.abs().amax(dim=-1, keepdim=True).clamp_min(1e-8) * (1.0 / 127.0)
        q = torch.round(x / scale).clamp(-128, 127).to(torch.int8)
        return q, scale.squeeze(-1)


batch_size = 16384
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


def flops():
    return 3 * batch_size * dim
