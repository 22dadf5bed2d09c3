"""Device memory that one process lends another: the wire's path for CUDA tensors (wire.py).

An `Arena` is one allocation made through the CUDA driver's virtual memory calls (cuMemCreate) and exported as a file
descriptor, which the wire passes with a message (SCM_RIGHTS), as it passes its memfd on the CPU. The receiver maps
it (`Mapping`) once per connection, and copies what each message holds out of it, device to device, into memory of
its own. A descriptor crosses pid namespaces, which CUDA's legacy IPC handles do not (the player lives in a pid
namespace of its own, player/main.py).

An arena holds nothing but what its owner sent on that one connection: it is its own allocation (never a block of
PyTorch's caching allocator, whose segments hold other tensors), so mapping it shows the receiver nothing else of the
sender's memory. The sender writes into it only after the receiver has answered the previous message (the wire is
request and answer), and the receiver reads from it only while it decodes the message that named it.

Standard library and torch only (ctypes on libcuda), like the other files of player/.
"""

from __future__ import annotations

import ctypes
import os

_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class DeviceMemoryError(Exception):
    """A driver call failed (or the driver has no such call)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        try:
            _LIB = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DeviceMemoryError(f"no CUDA driver library: {e}") from e
    return _LIB


def _call(name: str, *args) -> None:
    try:
        fn = getattr(_lib(), name)
    except AttributeError as e:
        raise DeviceMemoryError(f"the CUDA driver has no {name}") from e
    code = fn(*args)
    if code != 0:
        text = ctypes.c_char_p()
        _lib().cuGetErrorString(code, ctypes.byref(text))
        raise DeviceMemoryError(f"{name}: {(text.value or b'').decode(errors='replace') or code}")


def _bind(index: int) -> None:
    """Make the device's primary context (PyTorch's) current on this thread, as the driver calls need."""
    import torch
    torch.cuda.init()
    ctx = ctypes.c_void_p()
    _call("cuCtxGetCurrent", ctypes.byref(ctx))
    dev = ctypes.c_int()
    _call("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(index))
    current = ctypes.c_int(-1)
    if ctx.value:
        _call("cuCtxGetDevice", ctypes.byref(current))
    if not ctx.value or current.value != dev.value:
        _call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        _call("cuCtxSetCurrent", ctx)


def _prop(index: int) -> _Prop:
    p = _Prop()
    p.type, p.requestedHandleTypes = _PINNED, _POSIX_FD
    p.location = _Location(_DEVICE, index)
    return p


def granularity(index: int) -> int:
    g = ctypes.c_size_t()
    p = _prop(index)
    _call("cuMemGetAllocationGranularity", ctypes.byref(g), ctypes.byref(p), ctypes.c_int(0))
    return max(1, g.value)


class _Mapped:
    """An allocation mapped into this process at `ptr`, `size` bytes, read and written from device `index`."""

    def __init__(self, index: int, size: int):
        self.index, self.size, self.ptr, self.handle = index, size, 0, None

    def _map(self) -> None:
        ptr = ctypes.c_ulonglong()
        _call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(self.size), ctypes.c_size_t(0),
              ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
        try:
            _call("cuMemMap", ptr, ctypes.c_size_t(self.size), ctypes.c_size_t(0), self.handle, ctypes.c_ulonglong(0))
            try:
                access = _Access(_Location(_DEVICE, self.index), _READ_WRITE)
                _call("cuMemSetAccess", ptr, ctypes.c_size_t(self.size), ctypes.byref(access), ctypes.c_size_t(1))
            except DeviceMemoryError:
                _call("cuMemUnmap", ptr, ctypes.c_size_t(self.size))
                raise
        except DeviceMemoryError:
            _call("cuMemAddressFree", ptr, ctypes.c_size_t(self.size))
            raise
        self.ptr = ptr.value

    def view(self, offset: int = 0, nbytes: int | None = None):
        """A uint8 tensor over `nbytes` of the mapping from `offset` (no copy; valid while the mapping is)."""
        import torch
        nbytes = self.size - offset if nbytes is None else nbytes
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise DeviceMemoryError("a range past the end of the mapping")
        if nbytes == 0:
            return torch.empty(0, dtype=torch.uint8, device=f"cuda:{self.index}")
        face = _Face(self.ptr + offset, nbytes)
        return torch.as_tensor(face, device=f"cuda:{self.index}")

    def close(self) -> None:
        """Unmap and release (also from a finalizer at exit: nothing raises out of here)."""
        if self.ptr:
            try:
                _bind(self.index)
                _call("cuMemUnmap", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
                _call("cuMemAddressFree", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
            except Exception:  # noqa: BLE001  (a driver already torn down at exit)
                pass
            self.ptr = 0
        if self.handle is not None:
            try:
                _call("cuMemRelease", self.handle)
            except Exception:  # noqa: BLE001
                pass
            self.handle = None


class _Face:
    """What torch.as_tensor reads a device pointer from (the CUDA array interface)."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2}


class Arena(_Mapped):
    """An allocation of this process's, `size` bytes on device `index` (rounded up to the driver's granularity), with
    the descriptor `fd` that lends it (owned here: close() closes it)."""

    def __init__(self, index: int, size: int):
        _bind(index)
        g = granularity(index)
        super().__init__(index, (max(1, size) + g - 1) // g * g)
        self.fd = -1
        handle = ctypes.c_ulonglong()
        p = _prop(index)
        _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(self.size), ctypes.byref(p), ctypes.c_ulonglong(0))
        self.handle = handle
        try:
            fd = ctypes.c_int(-1)
            _call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, ctypes.c_int(_POSIX_FD),
                  ctypes.c_ulonglong(0))
            self.fd = fd.value
            os.set_inheritable(self.fd, False)
            self._map()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        super().close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Mapping(_Mapped):
    """Another process's arena, mapped here from its descriptor (`fd` is not kept: the caller closes it)."""

    def __init__(self, fd: int, index: int, size: int):
        _bind(index)
        if size <= 0 or size % granularity(index):
            raise DeviceMemoryError(f"a mapping of {size} bytes")
        super().__init__(index, size)
        handle = ctypes.c_ulonglong()
        _call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), ctypes.c_int(_POSIX_FD))
        self.handle = handle
        try:
            self._map()  # fails when `size` is more than the allocation holds
        except BaseException:
            self.close()
            raise


_WORKS: dict[int, str | None] = {}


def unavailable(index: int) -> str | None:
    """Why arenas cannot carry tensors on device `index` here (None: they can). Tried once per process: an arena is
    made, lent to this process itself, and a value read back through the mapping."""
    if index not in _WORKS:
        _WORKS[index] = _try(index)
    return _WORKS[index]


def _try(index: int) -> str | None:
    import torch
    arena = mapping = None
    try:
        arena = Arena(index, 1)
        arena.view(0, 8).copy_(torch.arange(8, dtype=torch.uint8, device=f"cuda:{index}"))
        mapping = Mapping(arena.fd, index, arena.size)
        back = mapping.view(0, 8).cpu().tolist()
        return None if back == list(range(8)) else f"a value read back differs ({back})"
    except (DeviceMemoryError, RuntimeError, TypeError, ValueError, OSError) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        if mapping is not None:
            mapping.close()
        if arena is not None:
            arena.close()


# Cached but unused GPU memory a process keeps between a check's steps. Several checks verify on one GPU at once,
# each with a worker and a player: a caching allocator that kept its largest variant's blocks would hold them through
# the rest of the check and leave the other checks without room (out of memory, and the whole check run again alone).
TRIM_SLACK = 1 << 30


def trim_cache(slack: int = TRIM_SLACK) -> int:
    """Give the GPU back what this process's caching allocator holds unused, when that is more than `slack` bytes;
    returns the bytes it held unused before (0 where CUDA was never used here). The player calls it after every
    request but a timed one, the checker after every variant (verify/schedule.py)."""
    try:
        import torch
        if not torch.cuda.is_initialized():
            return 0
        unused = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        if unused > slack:
            torch.cuda.empty_cache()
        return unused
    except Exception:
        return 0
