"""Which references may compute otherwise in training mode, read from their own code (loader._reads_training): the
functional forms of dropout and normalization take `self.training` as an argument, which no module type shows.
Whether the reference then draws is seen when the train-mode variant calls it (tests/corpus: the functional cases)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernel_lsp.checker.problem.loader import _reads_training


class FunctionalDropout(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.1, self.training)


class DropoutWhenTraining(nn.Module):
    def forward(self, x):
        if self.training:
            x = torch.nn.functional.dropout(x, p=0.1)
        return x


class FunctionalBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("var", torch.ones(4))

    def forward(self, x):
        return F.batch_norm(x, self.mean, self.var, training=self.training)


class Outer(nn.Module):
    """A model whose own forward never reads its mode; a submodule of the user's does."""

    def __init__(self):
        super().__init__()
        self.inner = FunctionalBatchNorm()
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.inner(x))


class Base(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.1, self.training)


class Inherits(Base):
    """Its forward is its base class's."""


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return F.dropout(self.norm(x), 0.0, training=False)


def test_training_modes_a_class_reading_self_training_is_found_in_submodules_and_base_classes():
    for model in (FunctionalDropout(), DropoutWhenTraining(), FunctionalBatchNorm(), Outer(), Inherits()):
        assert _reads_training(model), type(model).__name__


def test_training_modes_eval_mode_as_built_or_no_self_training_is_not():
    assert not _reads_training(FunctionalDropout().eval())
    assert not _reads_training(Plain())
    assert not _reads_training(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)))  # torch's own classes: by type
