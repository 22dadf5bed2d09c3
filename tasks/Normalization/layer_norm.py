import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last dimension with affine parameters, fp16."""

    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.norm.weight.to(x.dtype),
                                              self.norm.bias.to(x.dtype), self.norm.eps)


batch_size = 8192
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features, dtype=torch.float16)]


def get_init_inputs():
    return [features]


def flops():
    return 8 * batch_size * features
