import torch
import torch.nn as nn

KERNEL_LSP_RANDOM = True


class Model(nn.Module):
    """Kaiming-uniform style initialization with a seed: a (rows, cols) matrix drawn from U(-b, b), b = sqrt(6 / cols)."""

    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.rows, self.cols = rows, cols
        self.register_buffer("anchor", torch.empty(0))  # follows .to(device): where to draw the numbers

    def forward(self, seed: int) -> torch.Tensor:
        device = self.anchor.device
        g = None if device.type == "meta" else torch.Generator(device=device).manual_seed(int(seed))
        bound = (6.0 / self.cols) ** 0.5
        return (torch.rand(self.rows, self.cols, generator=g, device=device) * 2 - 1) * bound


def kernel_lsp_check_sample(inputs, output):
    bound = (6.0 / output.shape[1]) ** 0.5
    if bool((output.abs() > bound).any()):
        return f"values outside [-{bound:.4g}, {bound:.4g}]: max |value| {output.abs().max().item():.4g}"
    return None


rows = 8192
cols = 8192


def get_inputs():
    return [int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]


def get_init_inputs():
    return [rows, cols]


def flops():
    return 2 * rows * cols
