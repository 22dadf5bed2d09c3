"""The two callables the verifier compares, built for given size knobs. Runs in a worker only.

`Problem` hides the linking form: `reference(*inputs)`, `implementation(*inputs)`, `make_inputs()`, and
`size_knobs` (module-level integers the input factory reads, which the verifier scales to try other sizes). It
answers questions of size on the meta device (element counts, the shapes the reference accepts) with no memory and
no compute. The reference upcast to float64, which computes the truth, is made here too.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Problem:
    """The two callables to compare, built for given size knobs (KernelBench models depend on them)."""

    build: Callable[[dict[str, int], list | None], tuple[Callable, Callable]]  # (knobs, init inputs) -> callables
    input_factory: Callable[[], list]
    input_module: types.ModuleType
    size_knobs: dict[str, int] = field(default_factory=dict)
    # A fresh reference, given init inputs or None for the problem's own (for shape-only runs on meta).
    make_reference: Callable[[list | None], Callable] | None = None
    device: str = "cpu"  # where inputs and models live: "cuda" when kernels run on a GPU
    random: bool = False  # the reference draws random numbers: judge distributions, not elements
    sample_check: Callable[[list, Any], str | None] | None = None  # per-sample invariant from the reference
    _built: dict[tuple, tuple[Callable, Callable]] = field(default_factory=dict)
    _float64: dict[tuple[int, bool], tuple[Callable, Callable]] = field(default_factory=dict)  # float64()
    # Another version of the implementation file, built like the implementation (a race between two versions).
    build_other: Callable[[str], Callable] | None = None
    init_inputs: Callable[[], list] | None = None  # KernelBench's get_init_inputs
    seed: int = 0  # the seed each model is built after (KernelBench's rule)
    trains: bool = False  # the reference model leaves a normalization in training mode (PyTorch's default) as built
    drops: bool = False  # the reference model leaves a dropout in training mode as built: random there, judged so
    trains_in_code: bool = False  # code of the model's own reads self.training (drops is set once it draws there)
    # id of a reference model -> each of its modules' training flag as built (the train-mode variant's reference where
    # no norm, dropout or code of its own says it trains differently: a torch module that draws while training, an
    # RReLU or an attention's dropout, is seen drawing there)
    as_built: dict = field(default_factory=dict)

    def float64(self, ref: Callable, absolute: bool = False) -> Callable:
        """The reference upcast to float64 (parameters made absolute when asked), copied once per reference
        object: variants of one size, and the measure stage, share the copy."""
        key = (id(ref), absolute)
        held = self._float64.get(key)
        if held is None or held[0]() is not ref:
            # Keyed by id, and an id is reused once its object is freed: a train-mode variant's fresh model built
            # where the parameters variant's eval-mode model had been got that model's copy as its truth (a wrong
            # batch norm passed 3% of checks). The entry is tied to its reference's life: held by a weak reference
            # dropped with it, or (an object that takes none) by the reference itself.
            try:
                alive = weakref.ref(ref, lambda _, k=key, entries=self._float64: entries.pop(k, None))
            except TypeError:
                alive = (lambda kept: lambda: kept)(ref)
            held = self._float64[key] = (alive, float64_reference(ref, absolute))
        return held[1]

    @contextlib.contextmanager
    def knobs_set(self, knobs: dict[str, int] | None):
        saved = {k: getattr(self.input_module, k) for k in (knobs or {})}
        try:
            for k, v in (knobs or {}).items():
                setattr(self.input_module, k, v)
            yield
        finally:
            for k, v in saved.items():
                setattr(self.input_module, k, v)

    def fresh_reference(self, init: list | None) -> Callable:
        """A reference built afresh for these init inputs, as the problem's own is (after the seed), in eval mode and on
        the problem's device; the linked function itself for a problem without a model."""
        import torch
        manual_seed(self.seed)
        ref = self.make_reference(init)
        return ref.eval().to(self.device) if isinstance(ref, torch.nn.Module) else ref

    def init(self, knobs: dict[str, int] | None = None, setting: dict | None = None) -> list | None:
        """The init inputs at these knobs with the setting's init entries applied (None: no init inputs)."""
        if self.init_inputs is None:
            return None
        from ..verify.plan.shapes import init_with
        with self.knobs_set(knobs):
            return init_with(list(self.init_inputs()), setting or {})

    def callables(self, knobs: dict[str, int] | None = None,
                  setting: dict | None = None) -> tuple[Callable, Callable]:
        """(reference, implementation) for these knobs and size setting (shapes.py: only its init entries change
        the models); raises UserCodeError when building fails."""
        init = {p: n for p, n in (setting or {}).items() if p[0] == "init"}
        key = (tuple(sorted((knobs or {}).items())), tuple(sorted(init.items())))
        if key not in self._built:
            with self.knobs_set(knobs):
                self._built[key] = self.build(knobs or {}, self.init(knobs, init) if init else None)
        return self._built[key]

    @property
    def reference(self) -> Callable:
        return self.callables()[0]

    @property
    def implementation(self) -> Callable:
        return self.callables()[1]

    def elements(self, knobs: dict[str, int] | None = None) -> int:
        """Input plus output elements at these sizes, found on the meta device: no memory, no compute."""
        return sum(self.element_counts(knobs))

    def element_counts(self, knobs: dict[str, int] | None = None) -> tuple[int, int]:
        """(input elements, output elements) at these sizes, on the meta device (outputs 0 where an op has no
        meta kernel: inputs alone must do)."""
        import torch
        from ..verify.plan.variants import numel_of
        with self.knobs_set(knobs), torch.device("meta"):
            inputs = self.input_factory()
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            outputs = 0
            try:
                reference = self.make_reference(None) if self.make_reference else None
                if reference is not None:
                    with torch.no_grad():
                        out = reference(*inputs)
                    outs = out if isinstance(out, (list, tuple)) else [out]
                    outputs = numel_of([o for o in outs if isinstance(o, torch.Tensor)])
            except Exception:
                pass
        return numel_of(inputs), outputs

    def meta_inputs(self, knobs: dict[str, int] | None = None) -> list:
        """The input factory's result on the meta device: shapes, dtypes and plain values, nothing allocated."""
        import torch
        with self.knobs_set(knobs), torch.device("meta"):
            inputs = self.input_factory()
        return list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]

    def reduction_knobs(self, knobs: dict[str, int]) -> set[str]:
        """Knobs that size the inputs but not the outputs (a row length that is summed over): the CPU size planner
        shortens them last, so a reduction keeps its length (variants.shrink_knobs)."""
        try:
            ins, outs = self.element_counts(knobs)
        except Exception:
            return set()
        found = set()
        for k, v in knobs.items():
            if v < 16:
                continue
            try:
                ins2, outs2 = self.element_counts({**knobs, k: v // 2})
            except Exception:
                continue
            if outs and outs2 == outs and ins2 != ins:
                found.add(k)
        return found

    def accepts(self, knobs: dict[str, int], setting: dict, base_inputs: list) -> bool:
        """Whether the reference takes inputs resized by `setting` (shapes.py), judged on the meta device: shapes
        only, no memory, no compute. An op without a meta kernel says nothing, and counts as accepted (a real run
        that fails is a skipped variant)."""
        import torch
        from ..verify.plan.shapes import resized_shape
        if self.make_reference is None:
            return True
        try:
            with self.knobs_set(knobs), torch.device("meta"):
                manual_seed(0)
                reference = self.make_reference(self.init(knobs, setting))
                inputs = [torch.empty(resized_shape(tuple(x.shape), i, setting), dtype=x.dtype)
                          if isinstance(x, torch.Tensor) else setting.get(("int", i), x)
                          for i, x in enumerate(base_inputs)]
                with torch.no_grad(), resizes_out() as resized:
                    reference(*inputs)
                if resized:
                    return False  # only by resizing a mis-sized out= tensor, which PyTorch deprecates
        except (NotImplementedError, MemoryError):
            return True
        except Exception as e:
            return "meta" in str(e).lower()
        return True

    def make_inputs(self, seed: int, knobs: dict[str, int] | None = None, setting: dict | None = None) -> list:
        """The input factory's tensors, on the problem's device, resized by `setting` (shapes.py). On a GPU the
        factory runs with it as the default device, so `torch.randn(...)` draws there instead of on the CPU
        (seconds per call at 64M elements)."""
        import torch
        from ..verify.plan.shapes import apply
        with self.knobs_set(knobs):
            manual_seed(seed)
            if self.device == "cpu":
                inputs = self.input_factory()
            else:
                with torch.device(self.device):
                    inputs = self.input_factory()
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        return apply([x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs], setting or {}, seed)


def manual_seed(seed: int) -> None:
    """torch.manual_seed for the generators a check draws from: the CPU's and every GPU's (queued until CUDA starts,
    as torch.manual_seed queues it). torch.manual_seed also queues a seed for each backend that never starts here
    (XPU and others), and records its caller's stack for each: about a millisecond a call on a worker's stack, and
    a check seeds a hundred times or more."""
    import torch
    torch.random.default_generator.manual_seed(int(seed))
    if torch.cuda.is_initialized() or torch.cuda._is_compiled():  # never asks the driver (a CPU check may fork)
        torch.cuda.manual_seed_all(int(seed))


@contextlib.contextmanager
def resizes_out():
    """Yields a list that holds PyTorch's warnings, once the block ends, that it resized a mis-sized `out=` tensor
    ("An output with one or more elements was resized..."): a deprecated behaviour, and no size the reference
    accepts (an implementation may refuse it)."""
    import warnings
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield found
    found += [str(w.message) for w in caught if "was resized since it had shape" in str(w.message)]


@contextlib.contextmanager
def float64_defaults():
    """Floating-point tensors the reference makes itself (`torch.logspace(0, 3, n)`, `torch.ones(n)`, a `torch.tensor`
    of floats) are made in float64 while its truth is computed: a problem with no float inputs otherwise has its
    float32 result as its own truth, and a budget of PyTorch's error of zero."""
    import torch
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _in_float64(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def truth(*args, **kwargs):
        with float64_defaults():
            return fn(*args, **kwargs)
    return truth


def float64_reference(ref, absolute: bool = False):
    """The reference computing in float64: a model's parameters and buffers upcast, and tensors it makes itself made
    in float64 (float64_defaults); the inputs are the caller's to upcast. `inspect.unwrap` gives a function's own."""
    import torch
    if isinstance(ref, torch.nn.Module):
        model = copy.deepcopy(ref).double()
        if absolute:
            with torch.no_grad():
                for t in list(model.parameters()) + list(model.buffers()):
                    if t.is_floating_point():
                        t.abs_()
        model.forward = _in_float64(model.forward)  # the instance's: type(model).forward stays the class's own
        return model
    return _in_float64(ref)
