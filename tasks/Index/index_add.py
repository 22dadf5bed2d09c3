import torch
import torch.nn as nn


class Model(nn.Module):
    """Scatter-add rows into a zeroed table: out = zeros(n_out, dim).index_add_(0, idx, src), fp32."""

    def __init__(self, n_out: int):
        super().__init__()
        self.n_out = n_out

    def forward(self, src: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(self.n_out, src.shape[1], dtype=src.dtype, device=src.device)
        return out.index_add(0, idx, src)


n_src = 65536
n_out = 4096
dim = 512


def get_inputs():
    return [torch.randn(n_src, dim), torch.randint(0, n_out, (n_src,))]


def get_init_inputs():
    return [n_out]


def flops():
    return n_src * dim
