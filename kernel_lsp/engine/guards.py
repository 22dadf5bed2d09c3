"""Runtime evidence collectors for the verifier, installed in the worker only.

- `MemoryGuard` checks, under the Triton interpreter, every address a masked load, store or atomic touches
  against the extents of the tensors passed to the current launch. Out-of-bounds lanes are reported with the
  kernel line and then masked off, so the access cannot corrupt the heap and the run goes on. It wraps the
  interpreter builder's memory methods by name (`create_masked_load`, `create_masked_store`, and
  `create_atomic_rmw` where it exists), which all Triton 3.x interpreters have; where a load or store method is
  missing the guard stays unavailable (`available` is False, and the verifier reports bounds as unchecked)
  instead of failing. Atomic compare-and-swap is not guarded. It also records which line stored to which address, so a
  wrong element can be traced to the `tl.store` that wrote it.
- `poisoned_allocations(value)` makes `torch.empty`-style allocations start filled with a sentinel, so that
  elements an implementation never writes can be told apart from elements it wrote.
- `GuardRegions` (GPU): every tensor the implementation receives or allocates sits inside a larger buffer, with
  guard bytes of a known pattern before and after it; a guard byte that changed is an out-of-bounds store (KL208).
  Loads out of bounds change nothing and are not caught on a GPU (docs/verification.md).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class OutOfBounds:
    line: int | None  # 0-based line in the user's file
    kind: str  # load, store, atomic
    kernel: str
    count: int
    detail: str  # which tensor the first offending address misses, and by how much


@dataclass
class MemoryGuard:
    user_file: str
    ranges: list[tuple[int, int, str]] = field(default_factory=list)  # [lo, hi) and a label per launch tensor
    kernel: str = ""
    events: dict[tuple, OutOfBounds] = field(default_factory=dict)
    stores: list[tuple[int | None, Any]] = field(default_factory=list)  # (line, numpy address array) per store
    track_stores: bool = False
    available: bool = False
    _saved: list[tuple[Any, str, Any]] = field(default_factory=list)  # (builder, method, original)
    _threads: dict[int, tuple[str, list]] = field(default_factory=dict)  # thread -> (kernel, ranges) it launched

    def uninstall(self) -> None:
        """Put the interpreter's memory methods back (a long-lived worker runs many jobs)."""
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        self.available = False

    def set_launch(self, launch, tensors: list) -> None:
        """The launch this thread is about to run (the interpreter runs a grid in the launching thread; launches
        handed to other threads run beside it, each against its own tensors)."""
        ranges = []
        for i, t in enumerate(tensors):
            lo = t.data_ptr()
            span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0) if t.numel() else 0
            ranges.append((lo, lo + span * t.element_size(), f"tensor argument {i} {tuple(t.shape)}"))
        self.kernel, self.ranges = launch.spec.name, ranges
        self._threads[threading.get_ident()] = (launch.spec.name, ranges)

    def _launch(self) -> tuple[str, list]:
        return self._threads.get(threading.get_ident(), (self.kernel, self.ranges))

    def install(self) -> bool:
        try:
            import triton.runtime.interpreter as interp
            builder = interp.interpreter_builder
        except (ImportError, AttributeError):
            return False
        if not all(hasattr(builder, n) for n in ("create_masked_load", "create_masked_store")):
            return False
        import numpy as np
        guard = self

        def wrap(name, kind, ptr_index, mask_index):
            original = getattr(builder, name)
            guard._saved.append((builder, name, original))

            def guarded(*args, **kwargs):
                args = list(args)
                ptrs = args[ptr_index]
                mask = args[mask_index] if mask_index is not None and mask_index < len(args) else None
                new_mask = guard._check(kind, ptrs, mask, np)
                if new_mask is not None:
                    if mask is None:
                        return None if kind != "load" else original(*args, **kwargs)
                    args[mask_index] = type(mask)(new_mask, mask.dtype)
                if kind == "store" and guard.track_stores:
                    m = args[mask_index].data if mask_index is not None else None
                    addrs = ptrs.data if m is None else ptrs.data[np.broadcast_to(m, ptrs.data.shape)]
                    guard.stores.append((guard._line(), np.array(addrs, copy=True).reshape(-1)))
                return original(*args, **kwargs)

            setattr(builder, name, guarded)

        wrap("create_masked_load", "load", 0, 1)
        wrap("create_masked_store", "store", 0, 2)
        if hasattr(builder, "create_atomic_rmw"):
            wrap("create_atomic_rmw", "atomic", 1, 3)
        self.available = True
        return True

    def _line(self) -> int | None:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.user_file:
                return frame.f_lineno - 1
            frame = frame.f_back
        return None

    def _check(self, kind: str, ptrs, mask, np):
        """The mask with out-of-bounds lanes cleared, or None when every active lane is in bounds."""
        kernel, ranges = self._launch()
        if not ranges:
            return None
        addrs = ptrs.data
        try:
            elt = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
        except Exception:
            elt = 1
        active = np.ones(addrs.shape, dtype=bool) if mask is None else np.broadcast_to(mask.data.astype(bool), addrs.shape)
        if not active.any():
            return None
        a = addrs.astype(np.uint64)
        # A block of pointers derives from one base tensor. Its first active lane (the tile's origin) is
        # taken to lie in it; failing that, the tensor holding most active lanes. Lanes outside the base are
        # out of bounds even when they land in another tensor that happens to sit next to it in memory.
        spans = [((a >= np.uint64(lo)) & (a + np.uint64(elt) <= np.uint64(hi)), (lo, hi, label))
                 for lo, hi, label in ranges]
        first = int(np.flatnonzero(active.reshape(-1))[0])
        base = next((sp for sp in spans if sp[0].reshape(-1)[first]), None)
        if base is None:
            base = max(spans, key=lambda sp: int((sp[0] & active).sum()))
        inside, base_range = base
        bad = active & ~inside
        if not bad.any():
            return None
        line = self._line()
        example = int(a[bad].reshape(-1)[0])
        detail = self._describe(example, elt, base_range if bool((inside & active).any()) else None, ranges)
        key = (line, kind)
        ev = self.events.get(key)
        if ev is None:
            self.events[key] = OutOfBounds(line, kind, kernel, int(bad.sum()), detail)
        else:
            ev.count += int(bad.sum())
        return active & inside

    def _describe(self, addr: int, elt: int, base: tuple | None, ranges: list) -> str:
        best = None
        for lo, hi, label in ([base] if base else ranges):
            d = addr - hi if addr >= hi else lo - addr
            if best is None or d < best[0]:
                if addr >= hi:
                    k = (addr - hi) // elt
                    where = "the first element past the end of" if k == 0 else f"{k + 1} elements past the end of"
                else:
                    where = f"{-(-(lo - addr) // elt)} element(s) before the start of"
                best = (d, f"{where} {label}")
        return best[1] if best else "outside every tensor of the launch"

    def writer_of(self, addr: int) -> int | None:
        """The line of the last store that wrote `addr`, if stores were tracked."""
        for line, addrs in reversed(self.stores):
            if (addrs == addr).any():
                return line
        return None

    def store_lines_into(self, lo: int, hi: int) -> list[int]:
        lines = []
        for line, addrs in self.stores:
            if line is not None and line not in lines and ((addrs >= lo) & (addrs < hi)).any():
                lines.append(line)
        return lines


GUARD_BYTES = 4096  # before and after each guarded tensor: a store a few rows past the end lands here
GUARD_PATTERN = 0xA5


@dataclass
class Breach:
    label: str  # "input 1 (1000,)" or "a tensor the implementation allocated (1000,)"
    side: str  # "before" or "after"
    changed: int  # guard bytes that changed
    reach: int  # how far from the tensor the farthest changed byte lies, in bytes


@dataclass
class GuardRegions:
    """Guard bytes around the tensors of one GPU call (see the module docstring)."""

    regions: list[tuple[Any, int, int, str]] = field(default_factory=list)  # (uint8 buffer, lo, hi, label)
    devices: tuple[str, ...] = ("cuda",)  # where tensors are guarded (the tests guard CPU tensors too)

    def wrap(self, t, label: str):
        """A copy of `t` (same shape, strides and values) placed between two guard regions."""
        import torch
        if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.device.type not in self.devices:
            return t
        span = 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))
        nbytes = span * t.element_size()
        buf = torch.full((2 * GUARD_BYTES + nbytes + (-nbytes) % 16,), GUARD_PATTERN, dtype=torch.uint8,
                         device=t.device)
        inner = buf[GUARD_BYTES: GUARD_BYTES + nbytes].view(t.dtype)
        y = torch.as_strided(inner, tuple(t.shape), tuple(t.stride()))
        with torch.no_grad():
            y.copy_(t)
        self.regions.append((buf, GUARD_BYTES, GUARD_BYTES + nbytes, f"{label} {tuple(t.shape)}"))
        return y

    def breaches(self) -> list[Breach]:
        """Guard bytes that changed since `wrap`, per tensor and side (synchronizes the device)."""
        import torch
        if not self.regions:
            return []
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        out = []
        for buf, lo, hi, label in self.regions:
            for side, part, origin in (("before", buf[:lo], lo), ("after", buf[hi:], hi)):
                changed = (part != GUARD_PATTERN).nonzero().flatten()
                if changed.numel():
                    far = int(changed[0]) if side == "before" else int(changed[-1])
                    reach = origin - far if side == "before" else far + 1
                    out.append(Breach(label, side, int(changed.numel()), reach))
        return out

    def clear(self) -> None:
        self.regions.clear()


_ALLOCATORS = ("empty", "empty_like", "empty_strided")


@contextlib.contextmanager
def poisoned_allocations(value: float, guards: GuardRegions | None = None):
    """Within the block, torch.empty / empty_like / empty_strided / Tensor.new_empty / Tensor.new(sizes) return filled
    tensors (inside guard regions too, when `guards` is given)."""
    import torch
    saved = {name: getattr(torch, name) for name in _ALLOCATORS}
    saved_new_empty = torch.Tensor.new_empty
    saved_new = torch.Tensor.new

    def legacy_new(self, *a, **k):
        """Tensor.new(sizes) is uninitialized memory as torch.empty is (KernelBench's result-reuse cheat);
        Tensor.new(data) copies its data and is left alone."""
        t = saved_new(self, *a, **k)
        sizes = (a and all(isinstance(v, int) and not isinstance(v, bool) for v in a)) or (
            len(a) == 1 and isinstance(a[0], torch.Size))
        return fill(t) if sizes else t

    def fill(t):
        if guards is not None:
            t = guards.wrap(t, "a tensor the implementation allocated")
        if isinstance(t, torch.Tensor):
            with torch.no_grad():
                if t.is_floating_point():
                    t.fill_(value)
                elif t.dtype == torch.bool:
                    t.fill_(True)
                else:
                    info = torch.iinfo(t.dtype)
                    t.fill_(info.max if value != value or value > 0 else info.min)
        return t

    def make(name):
        original = saved[name]
        return lambda *a, **k: fill(original(*a, **k))

    try:
        for name in _ALLOCATORS:
            setattr(torch, name, make(name))
        torch.Tensor.new_empty = lambda self, *a, **k: fill(saved_new_empty(self, *a, **k))
        torch.Tensor.new = legacy_new
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = saved_new_empty
        torch.Tensor.new = saved_new
