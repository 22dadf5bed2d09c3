"""The watch lists of tamper.py (the worker's, run/tamper.py) and of the player (player/tamper.py) name what exists: a
listed module, class or function that resolves to nothing is silently not watched, so each entry is checked here."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

from kernel_lsp.player import tamper as player_tamper

# Absent from a build of torch without CUDA, present in every CUDA build.
CUDA_BUILD_ONLY = {"torch._C._cuda_synchronize"}


def _imported(dotted: str):
    """The object `dotted` names, its longest module prefix imported first (as the checked code would have)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    return player_tamper._resolve(dotted)


def _unresolved(watched: dict, classes: dict) -> list[str]:
    """The listed names that resolve to nothing: a module or class path, or a name in it (inherited or not)."""
    missing = []
    for place, names in {**watched, **classes}.items():
        obj = _imported(place)
        if obj is None:
            missing.append(place)
            continue
        missing += [f"{place}.{name}" for name in names if not hasattr(obj, name)]
    return _but_cuda_build_only(missing)


def _unrecorded(watched: dict, classes: dict) -> list[str]:
    """The listed names a snapshot does not record, so that replacing them would go unseen."""
    for place in {**watched, **classes}:
        _imported(place)
    recorded = player_tamper.current(watched, classes)
    return _but_cuda_build_only([f"{place}.{name}" for place, names in {**watched, **classes}.items()
                                 for name in names if f"{place}.{name}" not in recorded])


def _but_cuda_build_only(missing: list[str]) -> list[str]:
    import torch
    return [m for m in missing if not (torch.version.cuda is None and m in CUDA_BUILD_ONLY)]


def test_tamper_every_name_the_player_watches_resolves():
    """player/tamper.py imports nothing of kernel_lsp and names torch, Triton and the standard library by strings:
    each must still name something in the versions installed."""
    assert _unresolved(player_tamper.WATCHED, player_tamper.CLASSES) == []


def test_tamper_every_name_the_player_watches_is_recorded():
    assert _unrecorded(player_tamper.WATCHED, player_tamper.CLASSES) == []


def test_tamper_every_name_the_worker_watches_resolves():
    from kernel_lsp.run import tamper
    assert _unresolved(tamper.WATCHED, tamper.CLASSES) == []
    own = {where: names for where, names in {**tamper.WATCHED, **tamper.CLASSES}.items()
           if where.startswith("kernel_lsp")}
    assert len(own) == len(tamper.OWN_FUNCTIONS) + len(tamper.OWN_CLASSES) == 9
    assert _unrecorded({k: v for k, v in own.items() if k in tamper.WATCHED},
                       {k: v for k, v in own.items() if k in tamper.CLASSES}) == []


def _serve_as_main(monkeypatch, name: str = "__worker_main__"):
    """run/serve.py loaded as `python -m kernel_lsp.run.serve` loads it: a module not named kernel_lsp.run.serve
    (there, `__main__`), its classes that module's."""
    path = Path(importlib.util.find_spec("kernel_lsp.run.serve").origin)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "kernel_lsp.run"
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_tamper_the_long_lived_worker_watches_its_own_sink(monkeypatch):
    """A long-lived worker runs as `python -m kernel_lsp.run.serve`: its StreamSink, the way out of every finding, is
    `__main__.StreamSink`. The watch list once named it "kernel_lsp.run.serve.StreamSink", a module never imported
    in the worker, so a reference that replaced its emit went unseen."""
    from kernel_lsp.run.tamper import Snapshot
    main = _serve_as_main(monkeypatch)
    pristine = Snapshot(*main.WATCHED_HERE)
    monkeypatch.setattr(main.StreamSink, "emit", lambda self, event: None)  # what a hostile reference would do
    assert "__worker_main__.StreamSink.emit" in pristine.changed()


def test_tamper_a_replaced_judge_is_reported_by_its_module_name(monkeypatch):
    from kernel_lsp.checker.verify import verifier
    from kernel_lsp.run.tamper import Snapshot
    pristine = Snapshot()
    monkeypatch.setattr(verifier, "judge", lambda evidence: None)
    assert pristine.changed() == ["kernel_lsp.checker.verify.verifier.judge"]


@pytest.mark.parametrize("obj, name", [("module", "kernel_lsp.checker.verify.rules"),
                                       ("class", "kernel_lsp.run.protocol.EventWriter")])
def test_tamper_where_names_modules_and_classes(obj, name):
    from kernel_lsp.checker.verify import rules
    from kernel_lsp.run.protocol import EventWriter
    from kernel_lsp.run.tamper import where
    assert where(rules if obj == "module" else EventWriter) == name


def test_tamper_a_tensor_method_replaced_on_the_class_shows(monkeypatch):
    """torch.Tensor's methods live on a base class (torch._C.TensorBase, which cannot be changed): one replaced on
    torch.Tensor itself is a changed entry."""
    import torch
    snapshot = player_tamper.Snapshot()
    assert snapshot.changed() == []
    monkeypatch.setattr(torch.Tensor, "clone", lambda self, *args, **kwargs: self)
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True)
    assert {"torch.Tensor.clone", "torch.Tensor.__eq__"} <= set(snapshot.changed())
