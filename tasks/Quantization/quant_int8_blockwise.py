import torch
import torch.nn as nn


class Model(nn.Module):
    """Symmetric int8 quantization with one scale per block of 128 consecutive elements of a row
    (group-wise, as weight-only quantization uses). Round half to even, saturate. Returns (q, scales)."""

    def __init__(self, group: int = 128):
        super().__init__()
        self.group = group

    def forward(self, x: torch.Tensor):
        rows, cols = x.shape
        g = x.reshape(rows, cols // self.group, self.group)
        scale = g.abs().amax(dim=-1, keepdim=True).clamp_min(1e-8) * (1.0 / 127.0)
        q = torch.round(g / scale).clamp(-128, 127).to(torch.int8)
        return q.reshape(rows, cols), scale.squeeze(-1)


batch_size = 16384
n_groups = 32


def get_inputs():
    return [torch.randn(batch_size, n_groups * 128)]


def get_init_inputs():
    return []


def flops():
    return 3 * batch_size * n_groups * 128
