import torch
import torch.nn as nn

# kernel-lsp judges random ops by distribution, repeatability and per-sample invariants (docs/verification.md).
KERNEL_LSP_RANDOM = True
P = 0.1


class Model(nn.Module):
    """Inverted dropout with a seed: keep each element with probability 1 - p and scale it by 1 / (1 - p)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        g = torch.Generator(device=x.device).manual_seed(int(seed))
        keep = torch.rand(x.shape, generator=g, device=x.device) >= P
        return torch.where(keep, x / (1 - P), torch.zeros_like(x))


def kernel_lsp_check_sample(inputs, output):
    """Every element is either dropped (0) or the input scaled by 1 / (1 - p)."""
    x = inputs[0]
    scaled = x / (1 - P)
    ok = (output == 0) | ((output - scaled).abs() <= 1e-6 * scaled.abs()) | (output.isnan() & x.isnan())
    if not bool(ok.all()):
        i = int((~ok).reshape(-1).nonzero()[0])
        return (f"element {i} is {output.reshape(-1)[i].item():.6g}: neither 0 nor x / (1 - p) = "
                f"{scaled.reshape(-1)[i].item():.6g}")
    return None


batch_size = 8192
dim = 8192


def get_inputs():
    seed = int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())
    return [torch.randn(batch_size, dim), seed]


def get_init_inputs():
    return []


def flops():
    return 2 * batch_size * dim
