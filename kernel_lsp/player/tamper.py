"""Did the checked code replace a function that verdicts or timings rest on? Runs in the player, beside it.

`Snapshot` records what the watched functions of torch, Triton, the clock and the builtins are (after the player's
own instruments are in place, before the implementation is imported); `changed()` lists those that are no longer
the same objects. The player reports them with every answer, and the checker says so (KL223): a kernel never needs
to replace `torch.cuda.Event.elapsed_time` or `torch.allclose`, and code that does is trying to bend a measurement or
a comparison, here or where it is run without a checker. The list is what a verdict or a timing rests on, not every
attribute (torch.compile itself sets some of those as it warms up). Imports nothing of kernel_lsp; the checker's own
process keeps a longer list (run/tamper.py).
"""

from __future__ import annotations

import sys

WATCHED = {
    "time": ["perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "sleep"],
    "builtins": ["open", "__import__", "isinstance", "len", "abs", "max", "min", "sum"],
    "torch": ["allclose", "isclose", "equal", "manual_seed", "empty", "empty_like", "empty_strided", "zeros",
              "zeros_like", "ones", "ones_like", "full", "randn", "rand", "randint", "randn_like", "rand_like",
              "abs", "isnan", "isinf", "isfinite", "where", "sum", "max", "min", "maximum", "minimum", "compile",
              "as_strided", "cat", "stack", "from_numpy", "tensor"],
    "torch.cuda": ["synchronize", "current_stream", "default_stream", "Event", "Stream", "_sleep",
                   "mem_get_info", "is_available", "current_device", "get_device_properties"],
    "torch._C": ["_cuda_synchronize"],
    "torch.testing": ["assert_close"],
    "triton.testing": ["do_bench", "do_bench_cudagraph"],
    "json": ["dumps", "loads"],
    "os": ["_exit"],
}
CLASSES = {
    "torch.Tensor": ["__eq__", "__ne__", "equal", "clone", "copy_", "to", "item", "tolist", "__getitem__",
                     "__setitem__", "sum", "abs", "double", "float", "cpu", "cuda", "contiguous", "fill_", "zero_"],
    "torch.cuda.Event": ["record", "elapsed_time", "synchronize", "query", "wait"],
    "triton.runtime.jit.JITFunction": ["run", "__getitem__"],
}


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            obj = module
            for name in parts[cut:]:
                obj = getattr(obj, name, None)
                if obj is None:
                    return None
            return obj
    return None


def current(watched: dict, classes: dict) -> dict[str, int]:
    """The identity of every watched object. A class's method is read from the first class of its method resolution
    order whose namespace holds it (torch.Tensor's methods live on torch._C.TensorBase), without binding it: one
    replaced on the class or on a base shows."""
    out = {}
    for where, names in {**watched, **classes}.items():
        obj = _resolve(where)
        if obj is None:
            continue
        spaces = [vars(k) for k in obj.__mro__] if where in classes and isinstance(obj, type) else [vars(obj)]
        for name in names:
            space = next((sp for sp in spaces if name in sp), None)
            if space is not None:
                out[f"{where}.{name}"] = id(space[name])
            elif where in watched and hasattr(obj, name):
                out[f"{where}.{name}"] = id(getattr(obj, name))
    return out


class Snapshot:
    def __init__(self, watched: dict | None = None, classes: dict | None = None) -> None:
        self.watched, self.classes = watched or WATCHED, classes or CLASSES
        self.ids = current(self.watched, self.classes)

    def changed(self) -> list[str]:
        """"torch.allclose", ...: the watched functions that are no longer the objects they were."""
        now = current(self.watched, self.classes)
        return [name for name, ident in self.ids.items() if now.get(name) != ident]
