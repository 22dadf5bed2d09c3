"""Problem.float64: the reference's float64 copy (the truth) belongs to one live reference object. Variants that
change the models (the parameters moved, training mode) build fresh ones; an id-keyed copy outliving its model was
handed to the next model built at the freed one's address, and a train-mode variant's truth was then the eval-mode
model's output: a batch norm that always uses its running statistics passed about 3% of checks
(tests/corpus/kb_batchnorm_running_stats_bug)."""

import gc

import torch
import torch.nn as nn

from kernel_lsp.checker.problem.problem import Problem


def _problem() -> Problem:
    return Problem(build=None, input_factory=lambda: [torch.randn(32, 48)], input_module=None)


def test_float64_copy_is_dropped_with_its_reference():
    p = _problem()
    model = nn.BatchNorm1d(48).eval()
    p.float64(model)
    assert len(p._float64) == 1
    del model
    gc.collect()
    assert p._float64 == {}


def test_float64_copy_of_a_model_built_where_a_freed_one_was_is_its_own():
    p = _problem()
    x = torch.randn(32, 48) * 2 + 0.5
    reused = 0
    for _ in range(50):
        old = nn.BatchNorm1d(48).eval()
        p.float64(old)
        freed = id(old)
        del old
        new = nn.BatchNorm1d(48).train()
        reused += id(new) == freed
        truth = p.float64(new)
        assert truth.training
        with torch.no_grad():
            assert torch.allclose(truth(x.double()), new(x).double(), atol=1e-5)
    assert reused, "no model was built at a freed one's address: the case this test is about never arose"


def test_float64_copy_is_shared_by_calls_on_one_reference():
    p = _problem()
    model = nn.Linear(4, 4)
    assert p.float64(model) is p.float64(model)
    assert p.float64(model, absolute=True) is not p.float64(model)

    def function(x):
        return x * 2

    assert p.float64(function) is p.float64(function)
