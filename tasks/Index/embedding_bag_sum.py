import torch
import torch.nn as nn


class Model(nn.Module):
    """Embedding bag with sum pooling over fixed-size bags: out[b] = sum_j W[idx[b, j]], fp32."""

    def __init__(self, num_embeddings: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, dim))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.embedding_bag(idx, self.weight, mode="sum")


num_embeddings = 100000
dim = 256
batch_size = 16384
bag = 32


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, bag))]


def get_init_inputs():
    return [num_embeddings, dim]


def flops():
    return batch_size * bag * dim
