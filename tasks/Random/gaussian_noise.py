import torch
import torch.nn as nn

KERNEL_LSP_RANDOM = True
SIGMA = 0.5


class Model(nn.Module):
    """Add Gaussian noise with a seed: out = x + sigma * N(0, 1), fp32."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        g = torch.Generator(device=x.device).manual_seed(int(seed))
        return x + SIGMA * torch.randn(x.shape, generator=g, device=x.device)


batch_size = 8192
dim = 8192


def get_inputs():
    seed = int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())
    return [torch.zeros(batch_size, dim) + torch.randn(batch_size, 1), seed]


def get_init_inputs():
    return []


def flops():
    return 2 * batch_size * dim
