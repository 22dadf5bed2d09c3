"""A call's allocations poisoned and its tensors placed between guard bytes, in the player (guards.py re-exports these).

- `poisoned_allocations(value)` makes `torch.empty`-style allocations start filled with a sentinel, so that
  elements an implementation never writes can be told apart from elements it wrote.
- `GuardRegions` (GPU): every tensor the implementation receives or allocates sits inside a larger buffer, with
  guard bytes of a known pattern before and after it; a guard byte that changed is an out-of-bounds store (KL208).
  Loads out of bounds change nothing and are not caught on a GPU (docs/verification.md).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any


def _extent(t) -> tuple[int, int]:
    """The bytes [lo, hi) a tensor's elements span (its strides included); a tensor or Triton's reinterpreted view of
    one (`triton.reinterpret`: shape, strides and data_ptr, no numel)."""
    lo, shape = t.data_ptr(), tuple(t.shape)
    span = 1 + sum((n - 1) * st for n, st in zip(shape, t.stride()) if n > 0) if all(shape) else 0
    return lo, lo + span * t.element_size()


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
        lo, hi = _extent(t)
        nbytes = hi - lo
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
