"""The wire's values (wire.py): a message's JSON-able form and back, its tensors as their storages.

`encode` turns a value into JSON-able data and collects the distinct storages of its tensors (`_Storages`); `decode`
accepts only the value kinds `encode` makes, and rebuilds tensors from a message's memory (`_Memory`: the memfd and
the other side's arenas), checking every dtype name, size, stride and offset against it. Standard library and torch
only, and no import of the package around it: the player runs this file as a plain module beside its own; wire.py
re-exports what callers use (`WireError`, `Closed`, `dtype_named`, `dtype_name`).
"""

from __future__ import annotations

import importlib
import mmap

# devmem.py beside this file: a sibling in the package, or a plain module in the player's folder (no relative import:
# a plain file has no package).
devmem = importlib.import_module(__name__.rpartition(".")[0] + ".devmem" if "." in __name__ else "devmem")


class WireError(Exception):
    """A message that does not follow the wire's format (or a connection that ended mid-message)."""


class NoMemory(WireError):
    """A whole message arrived but its tensors could not be rebuilt: memory ran out (the device's, or the host's).
    The connection is still in step: the receiver can answer that, rather than end."""


class Closed(WireError):
    """The other side closed the connection between messages."""


def _dtypes():
    import torch
    names = ["float16", "float32", "float64", "bfloat16", "complex64", "complex128", "int8", "int16", "int32", "int64",
             "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
             "float8_e5m2fnuz"]
    return {n: getattr(torch, n) for n in names if isinstance(getattr(torch, n, None), torch.dtype)}


_DTYPES: dict | None = None


def dtype_named(name: str):
    global _DTYPES
    if _DTYPES is None:
        _DTYPES = _dtypes()
    if name not in _DTYPES:
        raise WireError(f"unknown dtype {name!r}")
    return _DTYPES[name]


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


# Encoding ----------------------------------------------------------------------------------------------------------


class _Storages:
    """The distinct storages of one message, in order."""

    def __init__(self):
        self.index: dict[tuple, int] = {}
        self.items: list[tuple] = []  # (storage, nbytes)

    def add(self, storage) -> int:
        key = (storage.device.type, storage.device.index, storage.data_ptr(), storage.nbytes())
        if key not in self.index:
            self.index[key] = len(self.items)
            self.items.append((storage, storage.nbytes()))
        return self.index[key]


def encode(value, storages: _Storages):
    """A JSON-able form of `value`; its tensors' storages are collected in `storages`."""
    import torch
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else {"__bigint__": str(value)}
    if isinstance(value, float):
        return value
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.layout != torch.strided:
            raise WireError(f"a {t.layout} tensor cannot be sent")
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        if t.device.type not in ("cpu", "cuda"):
            raise WireError(f"a tensor on {t.device} cannot be sent")
        return {"__tensor__": {"s": storages.add(t.untyped_storage()), "dtype": dtype_name(t.dtype),
                               "shape": list(t.shape), "stride": list(t.stride()), "offset": t.storage_offset(),
                               "device": str(t.device)}}
    if isinstance(value, torch.dtype):
        return {"__dtype__": dtype_name(value)}
    if isinstance(value, torch.device):
        return {"__device__": str(value)}
    if isinstance(value, tuple):  # torch.Size is a tuple
        return {"__tuple__": [encode(v, storages) for v in value]}
    if isinstance(value, list):
        return [encode(v, storages) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[encode(k, storages), encode(v, storages)] for k, v in value.items()]}
    if isinstance(value, complex):
        return {"__complex__": [value.real, value.imag]}
    raise WireError(f"a value of type {type(value).__name__} cannot be sent")


# Decoding ----------------------------------------------------------------------------------------------------------


def _device(text: str):
    import torch
    if not isinstance(text, str):
        raise WireError("a device is not a string")
    try:
        d = torch.device(text)
    except (RuntimeError, ValueError) as e:
        raise WireError(f"bad device {text!r}") from e
    if d.type == "cpu":
        return d
    if d.type == "cuda" and torch.cuda.is_available():
        index = d.index if d.index is not None else torch.cuda.current_device()
        if 0 <= index < torch.cuda.device_count():
            return torch.device("cuda", index)
    raise WireError(f"no device {text!r} here")


def _int(v, what: str, low: int = 0) -> int:
    if type(v) is not int or v < low:
        raise WireError(f"bad {what}: {v!r}")
    return v


class _Memory:
    """A message's memory as the receiver reads it: the memfd (`fd`) and the other side's arenas mapped here
    (`mappings`, by the message's arena number from 1); `table`: (offset, nbytes, arena number or 0) per storage."""

    def __init__(self, fd: int | None, table: list, mappings: list | None = None):
        self.fd, self.table, self.mm, self.made = fd, table, None, {}
        self.mappings = mappings or []
        self.read: set[int] = set()  # devices copied from

    def storage(self, index: int, device):
        import torch
        key = (index, str(device))
        if key in self.made:
            return self.made[key]
        if type(index) is not int or not 0 <= index < len(self.table):
            raise WireError(f"no storage {index!r}")
        offset, nbytes, where = self.table[index]
        data = torch.empty(nbytes, dtype=torch.uint8, device=device)  # on its device at once: one copy
        if where:
            mapping = self.mappings[where - 1]
            try:
                source = mapping.view(offset, nbytes)
            except devmem.DeviceMemoryError as e:
                raise WireError(f"a storage past the end of its arena ({e})") from e
            if nbytes:
                data.copy_(source)
                self.read.add(mapping.index)
            del source
        else:
            if self.mm is None:
                if self.fd is None:
                    raise WireError("tensors without memory")
                self.mm = mmap.mmap(self.fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            if offset + nbytes > len(self.mm):
                raise WireError("a storage past the end of its memory")
            if nbytes:
                data.copy_(torch.frombuffer(self.mm, dtype=torch.uint8, count=nbytes, offset=offset))
        self.made[key] = data.untyped_storage()
        return self.made[key]

    def close(self):
        self.made.clear()
        if self.mm is not None:
            self.mm.close()
        if self.read:  # copied out before this side answers (the sender then writes its arena again)
            import torch
            for index in self.read:
                torch.cuda.current_stream(index).synchronize()


def decode(value, memory: _Memory, depth: int = 0):
    import torch
    if depth > 64:
        raise WireError("nested too deeply")
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [decode(v, memory, depth + 1) for v in value]
    if not isinstance(value, dict) or len(value) != 1:
        raise WireError("an unknown value")
    (kind, body), = value.items()
    if kind == "__tuple__" and isinstance(body, list):
        return tuple(decode(v, memory, depth + 1) for v in body)
    if kind == "__dict__" and isinstance(body, list):
        out = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("a bad dict entry")
            key = decode(pair[0], memory, depth + 1)
            if not isinstance(key, (str, int, float, bool, type(None), tuple)):
                raise WireError("a dict key that cannot be hashed")
            out[key] = decode(pair[1], memory, depth + 1)
        return out
    if kind == "__dtype__":
        return dtype_named(body)
    if kind == "__device__":
        return torch.device(_device(body).type) if body == "cuda" else _device(body)
    if kind == "__bigint__" and isinstance(body, str) and body.lstrip("-").isdigit():
        return int(body)
    if kind == "__complex__" and isinstance(body, list) and len(body) == 2:
        return complex(float(body[0]), float(body[1]))
    if kind == "__tensor__" and isinstance(body, dict):
        return _tensor(body, memory)
    raise WireError(f"an unknown value kind {kind!r}")


def _tensor(meta: dict, memory: _Memory):
    import torch
    dtype = dtype_named(meta.get("dtype"))
    shape, stride = meta.get("shape"), meta.get("stride")
    if not isinstance(shape, list) or not isinstance(stride, list) or len(shape) != len(stride) or len(shape) > 64:
        raise WireError("a bad tensor shape")
    shape = [_int(n, "size") for n in shape]
    stride = [_int(s, "stride") for s in stride]
    offset = _int(meta.get("offset"), "offset")
    device = _device(meta.get("device"))
    storage = memory.storage(meta.get("s"), device)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if all(shape):
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
        if (last + 1) * itemsize > storage.nbytes():
            raise WireError("a tensor past the end of its storage")
    t = torch.empty(0, dtype=dtype, device=device)
    t.set_(storage, offset, shape, stride)
    return t
