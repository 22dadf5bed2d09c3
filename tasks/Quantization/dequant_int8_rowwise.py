import torch
import torch.nn as nn


class Model(nn.Module):
    """Dequantize int8 with one fp32 scale per row into fp16: y = fp16(q * scale)."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return (q.float() * scale[:, None]).to(torch.float16)


batch_size = 16384
dim = 8192


def get_inputs():
    return [torch.randint(-128, 128, (batch_size, dim), dtype=torch.int8), torch.rand(batch_size) * 0.05]


def get_init_inputs():
    return []


def flops():
    return batch_size * dim
