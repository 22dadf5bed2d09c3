import torch
import torch.nn as nn


class Model(nn.Module):
    """Gather rows of a table by index: out[i] = table[idx[i]] (index_select along dim 0), bf16."""

    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return torch.index_select(table, 0, idx)


rows = 65536
dim = 2048
n_index = 65536


def get_inputs():
    return [torch.randn(rows, dim, dtype=torch.bfloat16), torch.randint(0, rows, (n_index,))]


def get_init_inputs():
    return []


def flops():
    return 0
