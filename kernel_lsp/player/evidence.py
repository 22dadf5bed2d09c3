"""The evidence runs, in a player: the implementation called several more ways on inputs the checker sends, each
call's outputs and launches returned. Nothing here knows what the outputs will be compared with (the checker's
checker/verify/evidence/judge.py judges them).

Calls, each recorded as `runs[name] = {"outputs": [...], "launches": n, "error": text}`:
- "large": the `large` inputs, when given;
- "plain": the `A` inputs;
- the request's "refills", in order ("refilled", "refilled-2", ... "sparse", each with an input set): the tensors of
  the "plain" call, refilled in place with that set's values, passed again each time;
- "tail": the `C` inputs (fresh tensors);
- "watched": the `A` inputs again, each launch classified by what it did to its tensors (Launches);
- "skipped", "skipped-2": the `A` inputs again, with every kernel launch replaced by filling the tensors it was
  given (except the call's own inputs and a model's parameters) with a poison value (another one the second
  time): what the outputs hold then did not come from any launch.
"""

from __future__ import annotations

import time


# The child -------------------------------------------------------------------------------------------------


class Launches:
    """Counts kernel launches; in `skip` mode a launch runs nothing and poisons the tensors it was given; in `watch`
    mode each launch is classified by what it did to its tensors: "compute" (changed one to values no other
    argument held), "copy" (changed one only to the values another argument, not a call input, already held: a
    result computed before the launch), "input" (copied a call input), or "nothing" (changed nothing)."""

    def __init__(self):
        self.count = 0
        self.skip = False
        self.second = False  # the second poison (finite, other bits) for the second skipped run
        self.watch = False
        self.kinds: list[str] = []
        self.protected: list = []  # the call's own input tensors: never poisoned

    def install(self) -> None:
        import triton.runtime.jit as jit
        self._wrap(jit.JITFunction)
        try:
            import triton.runtime.interpreter as interp
            self._wrap(interp.InterpretedFunction)
        except (ImportError, AttributeError):
            pass

    def _wrap(self, cls) -> None:
        original = cls.run
        launches = self

        def run(self_fn, *args, **kwargs):
            if kwargs.get("warmup", False):
                return original(self_fn, *args, **kwargs)
            launches.count += 1
            values = _tensors_of(list(args) + list(kwargs.values()))
            if launches.skip:
                launches.poison(values)
                return None
            if not launches.watch:
                return original(self_fn, *args, **kwargs)
            before = launches.snapshot(values)
            out = original(self_fn, *args, **kwargs)
            launches.kinds.append(launches.classify(values, before))
            return out

        run.__wrapped__ = original
        run.__name__, run.__qualname__, run.__doc__ = original.__name__, original.__qualname__, original.__doc__
        cls.run = run

    def snapshot(self, values: list) -> list:
        import torch
        if torch.cuda.is_available() and any(isinstance(v, torch.Tensor) and v.is_cuda for v in values):
            torch.cuda.synchronize()
        return [v.detach().clone() if isinstance(v, torch.Tensor) else None for v in values]

    def classify(self, values: list, before: list) -> str:
        import torch
        if torch.cuda.is_available() and any(isinstance(v, torch.Tensor) and v.is_cuda for v in values):
            torch.cuda.synchronize()
        kinds = set()
        for i, (v, b) in enumerate(zip(values, before)):
            if b is None or _same(v, b):
                continue
            sources = [j for j, o in enumerate(before) if j != i and o is not None and _same(v, o)]
            if not sources:
                return "compute"
            inputs = [j for j in sources if any(_shares(values[j], p) for p in self.protected)]
            kinds.add("input" if inputs else "copy")
        return "input" if "input" in kinds else ("copy" if kinds else "nothing")

    def poison(self, values: list) -> None:
        import torch
        for v in values:
            if not isinstance(v, torch.Tensor) or v.numel() == 0:
                continue
            if any(_shares(v, p) for p in self.protected):
                continue
            _fill(v, self.second)


def _fill(v, second: bool = False) -> None:
    """Fill with a value no computation is likely to produce: NaN (or, the second time, -1234.5 in floats), the
    dtype's minimum + 7 (or its maximum - 3) in integers."""
    import torch
    with torch.no_grad():
        if v.is_floating_point():
            v.fill_(-1234.5 if second else float("nan"))
        elif v.dtype == torch.bool:
            v.fill_(not second)
        elif v.is_complex():
            v.fill_(complex(float("nan"), float("nan")))
        else:
            info = torch.iinfo(v.dtype)
            v.fill_(info.max - 3 if second else info.min + 7)


class Poisoned:
    """While active, what torch.empty and its kin return is filled (_fill) first, so that a kernel writing into a
    fresh buffer changes it even when the caching allocator hands back memory that already held the same values."""

    NAMES = ("empty", "empty_like", "empty_strided")

    def __enter__(self):
        import torch
        self.saved = [(torch, n, getattr(torch, n)) for n in self.NAMES]
        self.saved.append((torch.Tensor, "new_empty", torch.Tensor.new_empty))

        def wrap(original):
            def make(*args, **kwargs):
                out = original(*args, **kwargs)
                if isinstance(out, torch.Tensor) and out.numel():
                    _fill(out)
                return out
            return make
        for owner, name, original in self.saved:
            setattr(owner, name, wrap(original))
        return self

    def __exit__(self, *exc):
        for owner, name, original in self.saved:
            setattr(owner, name, original)


def _tensors_of(values: list) -> list:
    """The launch's arguments with each host-side tensor descriptor (TMA: triton.tools.tensor_descriptor's
    TensorDescriptor, whose `base` is the tensor it reads or writes) replaced by its tensor: a kernel that stores
    through a descriptor changes that tensor, and a skipped launch must poison it."""
    import torch
    out = []
    for v in values:
        if isinstance(v, (tuple, list)):
            out += _tensors_of(list(v))  # descriptors (or tensors) passed in a tuple
        elif not isinstance(v, torch.Tensor) and isinstance(getattr(v, "base", None), torch.Tensor):
            out.append(v.base)
        else:
            out.append(v)
    return out


def _same(a, b) -> bool:
    """Bit for bit the same values (NaN equal to NaN) at the same shape and dtype."""
    import torch
    if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def _shares(a, b) -> bool:
    try:
        sa, sb = a.untyped_storage(), b.untyped_storage()
        return sa.data_ptr() == sb.data_ptr() and sa.data_ptr() != 0
    except Exception:
        return False


def tensors_of(value) -> list:
    """The tensors in a value, in order: itself, or those in its lists, tuples and dicts (the measure stage's
    roofline counts the same way: checker/measure/roofline.py)."""
    import torch
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    return []


def _on(inputs: list, device: str) -> list:
    """Fresh copies on the device (never the saved tensors themselves: a call may refill or mutate them)."""
    import torch
    return [x.to(device, copy=True) if isinstance(x, torch.Tensor) else x for x in inputs]


def install() -> "Launches":
    """The launch counter, and under the interpreter the fixes that make it compute like the compiler (float
    arguments as fp32 scalars; list grids, int1 comparisons, libdevice) and an autotuner that takes its first
    config (timing configs there means nothing). Called once, before the implementation is imported."""
    import os
    launches = Launches()
    launches.install()
    if os.environ.get("TRITON_INTERPRET") == "1":
        import interpreter
        import interpreter_gaps
        interpreter.faithful_scalars()
        interpreter_gaps.close_gaps()
        interpreter.count_ops()  # the soak's calls are bounded by operations
        try:
            import triton.runtime.autotuner as at
            at.Autotuner._bench = lambda self_at, *a, config, **k: [float(self_at.configs.index(config))] * 3
        except (ImportError, AttributeError):
            pass
    return launches


def run(call, spec: dict, device: str, launches: "Launches") -> dict:
    """Every evidence call of `call` (a built model or the linked function) on the sets of `spec["sets"]`."""
    import torch
    torch.set_grad_enabled(False)
    saved = spec["sets"]
    state: list = []  # the model's own tensors: never poisoned
    if isinstance(call, torch.nn.Module):
        state = list(call.parameters()) + list(call.buffers())
    runs: dict = {}

    def attempt(name: str, inputs: list, skip: bool = False, watch: bool = False, second: bool = False) -> None:
        launches.count = 0
        launches.skip, launches.watch, launches.kinds, launches.second = skip, watch, [], second
        launches.protected = [x for x in inputs if isinstance(x, torch.Tensor)] + state
        try:
            torch.manual_seed(spec["seed"])
            if watch:
                with Poisoned():
                    out = call(*inputs)
            else:
                out = call(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            flat = tensors_of(out)
            runs[name] = {"outputs": [t.detach().to("cpu").clone() for t in flat], "launches": launches.count,
                          "aliases": [j for j, t in enumerate(flat)
                                      if any(_shares(t, x) for x in launches.protected)],
                          "kinds": list(launches.kinds)}
        except Exception as e:
            runs[name] = {"outputs": [], "launches": launches.count,
                          "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        finally:
            launches.skip = launches.watch = launches.second = False

    if "large" in saved:
        attempt("large", _on(saved["large"], device))
    plain = _on(saved["A"], device)
    attempt("plain", plain)
    # The same buffers, refilled in place again and again (the chain comes with the spec): a cache keyed on an
    # address, or one that starts replaying once an address repeats (a warmed-up timing loop), or one keyed on the
    # address and a few of the values, returns a stale result on one of them.
    # Past the first three, the refills stop once they have taken `refill_budget_s` (a slow kernel under the
    # interpreter must not run the whole re-run past its timeout); "sparse" still runs.
    began = time.monotonic()
    for k, (name, values) in enumerate(spec["refills"]):
        if values not in saved:
            continue
        if k >= 3 and name != "sparse" and time.monotonic() - began > spec["refill_budget_s"]:
            continue
        with torch.no_grad():
            for x, b in zip(plain, _on(saved[values], device)):
                if isinstance(x, torch.Tensor) and isinstance(b, torch.Tensor) and x.shape == b.shape:
                    x.copy_(b)
        attempt(name, plain)
    attempt("tail", _on(saved["C"], device))
    attempt("watched", _on(saved["A"], device), watch=True)
    # Last: what they poison is used by no later call.
    attempt("skipped", _on(saved["A"], device), skip=True)
    attempt("skipped-2", _on(saved["A"], device), skip=True, second=True)
    return runs
