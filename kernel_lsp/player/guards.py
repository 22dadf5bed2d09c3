"""Runtime evidence collectors for the verifier, installed in the worker only.

- `MemoryGuard` checks, under the Triton interpreter, every address a masked load, store or atomic touches
  against the extents of the tensors passed to the current launch: the tensor whose pointer argument the block of
  pointers was computed from (traced through the interpreter's pointer arithmetic), or where that trace is lost (a
  pointer chosen between two tensors, one made from an integer) the tensor its first lane lies in. Out-of-bounds
  lanes are reported with the kernel line and then masked off, so the access cannot corrupt the heap and the run
  goes on. It wraps the interpreter builder's memory methods by name (`create_masked_load`, `create_masked_store`,
  and `create_atomic_rmw` where it exists), which all Triton 3.x interpreters have; where a load or store method is
  missing the guard stays unavailable (`available` is False, and the verifier reports bounds as unchecked)
  instead of failing. Atomic compare-and-swap is not guarded. It also records which line stored to which address,
  so a wrong element can be traced to the `tl.store` that wrote it.
- `poisoned_allocations` and `GuardRegions` (GPU guard regions, KL208): guard_regions.py, re-exported here.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

# guard_regions.py beside this file: a sibling in the package, or a plain module in the player's folder.
guard_regions = importlib.import_module(
    __name__.rpartition(".")[0] + ".guard_regions" if "." in __name__ else "guard_regions")
_extent, poisoned_allocations = guard_regions._extent, guard_regions.poisoned_allocations
GuardRegions, Breach = guard_regions.GuardRegions, guard_regions.Breach
GUARD_BYTES, GUARD_PATTERN = guard_regions.GUARD_BYTES, guard_regions.GUARD_PATTERN

_BASE = "kernel_lsp_base"  # TensorHandle.attr key: the (lo, hi, label) launch tensor a block of pointers derives from
# Interpreter builder methods whose pointer results derive from their pointer operands.
_POINTER_OPS = ("create_addptr", "create_splat", "create_unsplat", "create_broadcast", "create_expand_dims",
                "create_reshape", "create_trans", "create_cat", "create_join", "create_split", "create_bitcast",
                "create_select")


def _is_pointer(h) -> bool:
    dtype = getattr(h, "dtype", None)
    return dtype is not None and getattr(dtype, "is_ptr", lambda: False)() and hasattr(h, "data")


def _tag(handles, base: tuple | None) -> None:
    """Mark the pointer handles among `handles` as derived from the launch tensor `base` (nothing when None)."""
    if base is not None:
        for h in handles:
            if getattr(h, "attr", None) is not None and _is_pointer(h):
                h.attr[_BASE] = base


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
    _live: dict[int, list] = field(default_factory=dict)  # thread -> live tensors' storages, found once per launch

    def uninstall(self) -> None:
        """Put the interpreter's memory methods back (a long-lived worker runs many jobs)."""
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        self.available = False

    def set_launch(self, launch, tensors: list) -> None:
        """The launch this thread is about to run (the interpreter runs a grid in the launching thread; launches
        handed to other threads run beside it, each against its own tensors)."""
        ranges = [(*_extent(t), f"tensor argument {i} {tuple(t.shape)}") for i, t in enumerate(tensors)]
        self.kernel, self.ranges = launch.spec.name, ranges
        self._threads[threading.get_ident()] = (launch.spec.name, ranges)
        self._live.pop(threading.get_ident(), None)

    def _launch(self) -> tuple[str, list]:
        return self._threads.get(threading.get_ident(), (self.kernel, self.ranges))

    def install(self) -> bool:
        """Wrap the interpreter's masked loads, stores and atomics, and the methods pointers derive through; False,
        with nothing wrapped, where the interpreter or its masked load or store is missing."""
        try:
            import triton.runtime.interpreter as interp
            builder = interp.interpreter_builder
        except (ImportError, AttributeError):
            return False
        if not all(hasattr(builder, n) for n in ("create_masked_load", "create_masked_store")):
            return False
        import numpy as np
        for name in _POINTER_OPS:
            if hasattr(builder, name):
                self._carry(builder, name)
        self._trace_arguments(interp)
        self._trace_descriptors(interp)
        self._guard(builder, "create_masked_load", "load", 0, 1, np)
        self._guard(builder, "create_masked_store", "store", 0, 2, np)
        if hasattr(builder, "create_atomic_rmw"):
            self._guard(builder, "create_atomic_rmw", "atomic", 1, 3, np)
        self.available = True
        return True

    def _guard(self, builder, name: str, kind: str, ptr_index: int, mask_index: int | None, np) -> None:
        """Wrap the builder's memory method `name`: lanes out of bounds are reported and masked off (where the call
        has no mask, a load runs as it is and a store or atomic is dropped), and with `track_stores` each store's
        addresses are recorded with its line."""
        original = getattr(builder, name)
        self._saved.append((builder, name, original))

        def guarded(*args, **kwargs):
            args = list(args)
            ptrs = args[ptr_index]
            mask = args[mask_index] if mask_index is not None and mask_index < len(args) else None
            new_mask = self._check(kind, ptrs, mask, np)
            if new_mask is not None:
                if mask is None:
                    return None if kind != "load" else original(*args, **kwargs)
                args[mask_index] = type(mask)(new_mask, mask.dtype)
            if kind == "store" and self.track_stores:
                m = args[mask_index].data if mask_index is not None else None
                addrs = ptrs.data if m is None else ptrs.data[np.broadcast_to(m, ptrs.data.shape)]
                self.stores.append((self._line(), np.array(addrs, copy=True).reshape(-1)))
            return original(*args, **kwargs)

        setattr(builder, name, guarded)

    def _carry(self, builder, name: str) -> None:
        """Pointer results of `name` derive from the same tensor as its pointer operands (when they agree)."""
        original = getattr(builder, name)
        self._saved.append((builder, name, original))

        def carried(*args, **kwargs):
            out = original(*args, **kwargs)
            base = self._base_of(args)
            cond = getattr(args[0], "data", None) if name == "create_select" and len(args) == 3 else None
            if base is None and cond is not None and cond.size and (cond.all() or not cond.any()):
                base = self._base_of([args[1] if cond.reshape(-1)[0] else args[2]])  # every lane picks one
            _tag(out if isinstance(out, tuple) else (out,), base)
            return out

        setattr(builder, name, carried)

    def _trace_arguments(self, interp) -> None:
        """A tensor argument's pointer derives from that tensor, not from whatever else starts at its address (a view
        and its parent passed together); nothing where the interpreter has no `_implicit_cvt`."""
        convert = getattr(interp, "_implicit_cvt", None)
        if convert is None:
            return
        self._saved.append((interp, "_implicit_cvt", convert))

        def converted(arg):
            out = convert(arg)
            h = getattr(out, "handle", None)
            if hasattr(arg, "data_ptr") and hasattr(arg, "stride") and _is_pointer(h):
                extent = _extent(arg)
                _tag([h], next((r for r in self._launch()[1] if r[:2] == extent), None))
            return out

        interp._implicit_cvt = converted

    def _trace_descriptors(self, interp) -> None:
        """A TMA descriptor's tile of pointers derives from the tensor the descriptor describes; nothing where the
        interpreter has no descriptors."""
        described = getattr(interp, "TensorDescHandle", None)
        if described is None or not hasattr(described, "materialize_pointers"):
            return
        materialize = described.materialize_pointers
        self._saved.append((described, "materialize_pointers", materialize))

        def materialized(desc, *args, **kwargs):
            ptrs, mask = materialize(desc, *args, **kwargs)
            _tag([ptrs], self._base_of([desc.base]))
            return ptrs, mask

        described.materialize_pointers = materialized

    def _base_of(self, args) -> tuple | None:
        """The launch tensor the pointer operands among `args` derive from: their traced base, or for a scalar pointer
        not yet traced (a kernel argument, a pointer loaded from memory) the tensor its address starts or lies in.
        None when there is no pointer operand, or two derive from different tensors."""
        found, ranges = None, self._launch()[1]
        for h in args:
            if not _is_pointer(h):
                continue
            base = h.attr.get(_BASE) if getattr(h, "attr", None) is not None else None
            if base is None and getattr(h.data, "size", 0) == 1:
                addr = int(h.data.reshape(-1)[0])
                holding = [r for r in ranges if r[0] <= addr < r[1]]
                starting = [r for r in holding if r[0] == addr]
                base = max(starting or holding, key=lambda r: r[1] - r[0]) if holding else None
                if starting and any(r[1] == addr for r in ranges):
                    base = None  # also one past the end of another tensor: which one it derives from is unknown
            if base is None or (found is not None and base != found):
                return None
            found = base
        return found

    def _live_storage(self, addr: int) -> tuple | None:
        """The storage of a live CPU tensor that holds `addr`, as (lo, hi, label): where a kernel follows a pointer it
        read from memory (a grouped GEMM's table of its tensors' addresses) to a tensor not passed to the launch.
        Plain tensors only: a subclass's methods are checked code."""
        live = self._live.get(threading.get_ident())
        if live is None:  # once per launch: the tensors do not change while its programs run
            import gc
            import torch
            live = []
            for obj in gc.get_objects():
                if type(obj) not in (torch.Tensor, torch.nn.Parameter) or obj.device.type != "cpu":
                    continue
                try:
                    storage = obj.untyped_storage()
                    lo, size = storage.data_ptr(), storage.nbytes()
                except Exception:  # a tensor without storage (a functional wrapper, a sparse one)
                    continue
                if size:
                    live.append((lo, lo + size, f"a tensor not passed to the launch {tuple(obj.shape)}"))
            self._live[threading.get_ident()] = live
        return next((r for r in live if r[0] <= addr < r[1]), None)

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
        # A block of pointers derives from one base tensor: the one traced through the pointer arithmetic, else
        # the tensor its first active lane (the tile's origin) lies in, failing that the one holding most active
        # lanes. Lanes outside the base are out of bounds even when they land in another tensor of the launch that
        # happens to sit next to it in memory (with a traced base, even a tile that lies wholly inside that other
        # tensor, so the allocator's placement does not decide what is found).
        def within(lo, hi):  # the lanes whose element lies inside [lo, hi)
            return (a >= np.uint64(lo)) & (a + np.uint64(elt) <= np.uint64(hi))

        spans = [(within(lo, hi), (lo, hi, label)) for lo, hi, label in ranges]
        traced = ptrs.attr.get(_BASE) if getattr(ptrs, "attr", None) is not None else None
        base = next((sp for sp in spans if sp[1] == traced), None) if traced is not None else None
        known = base is not None
        if known:  # tensors of the launch that overlap it share its storage (a view and its parent): one extent
            shared = [sp[0] for sp in spans if sp[1][0] < traced[1] and traced[0] < sp[1][1]]
            base = (np.logical_or.reduce(shared), traced)
        if base is None:
            first = int(np.flatnonzero(active.reshape(-1))[0])
            base = next((sp for sp in spans if sp[0].reshape(-1)[first]), None)
            if base is None:  # a pointer read from memory (a table of tensors' addresses): the live tensor it is in
                held = self._live_storage(int(a.reshape(-1)[first]))
                if held is not None:
                    base = (within(held[0], held[1]), held)
                    known = True
        if base is None:
            base = max(spans, key=lambda sp: int((sp[0] & active).sum()))
        inside, base_range = base
        bad = active & ~inside
        if not bad.any():
            return None
        line = self._line()
        example = int(a[bad].reshape(-1)[0])
        detail = self._describe(example, elt, base_range if known or bool((inside & active).any()) else None, ranges)
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
