"""The wire between the checker and the player: framed JSON messages over a Unix socket, tensors by memory.

Standard library and torch only, and no import of the package around it: the player runs this file as a plain
module beside its own.

A message is a JSON object. Tensors inside it travel as their storages, each distinct storage once (two views of one
storage arrive as two views of one storage: aliasing survives), copied into one anonymous memory file (memfd) per
message whose descriptor is passed with the message (SCM_RIGHTS). The receiver copies what it needs out of that
memory into tensors of its own, on the device named, and closes the file: nothing touches a file system, and the
sender's memory is never shared with the receiver.

What the player sends is untrusted: `recv` accepts only the value kinds `encode` makes (None, bool, int, float, str,
list, tuple, dict, tensor, dtype, device), checks every dtype name, size, stride and offset against the memory it came
with, and unpickles nothing. A malformed message raises `WireError`.
"""

from __future__ import annotations

import json
import mmap
import os
import socket
import struct

HEADER = struct.Struct("!II")  # JSON bytes, descriptors
MAX_JSON = 1 << 28
MAX_FDS = 4


class WireError(Exception):
    """A message that does not follow the wire's format (or a connection that ended mid-message)."""


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
    """The distinct storages of one message, in order, with their byte offsets in its memory file."""

    def __init__(self):
        self.index: dict[tuple, int] = {}
        self.items: list[tuple] = []  # (storage, offset, nbytes)
        self.size = 0

    def add(self, storage) -> int:
        key = (storage.device.type, storage.device.index, storage.data_ptr(), storage.nbytes())
        if key not in self.index:
            nbytes = storage.nbytes()
            self.index[key] = len(self.items)
            self.items.append((storage, self.size, nbytes))
            self.size += (nbytes + 63) // 64 * 64
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


def _write_storages(storages: _Storages) -> int | None:
    """A memfd holding every storage's bytes at its offset; None when there are none."""
    import torch
    if not storages.items:
        return None
    fd = os.memfd_create("buf", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(1, storages.size))
        with mmap.mmap(fd, max(1, storages.size)) as mm:
            whole = torch.frombuffer(mm, dtype=torch.uint8)
            for storage, offset, nbytes in storages.items:
                if nbytes:
                    src = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, 0, (nbytes,), (1,))
                    whole[offset: offset + nbytes].copy_(src)  # from a GPU too: one copy, no staging tensor
            del whole
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    def __init__(self, fd: int | None, table: list):
        self.fd, self.table, self.mm, self.made = fd, table, None, {}

    def storage(self, index: int, device):
        import torch
        key = (index, str(device))
        if key in self.made:
            return self.made[key]
        if type(index) is not int or not 0 <= index < len(self.table):
            raise WireError(f"no storage {index!r}")
        offset, nbytes = self.table[index]
        if self.mm is None:
            if self.fd is None:
                raise WireError("tensors without memory")
            self.mm = mmap.mmap(self.fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        if offset + nbytes > len(self.mm):
            raise WireError("a storage past the end of its memory")
        data = torch.empty(nbytes, dtype=torch.uint8, device=device)  # on its device at once: one copy
        if nbytes:
            data.copy_(torch.frombuffer(self.mm, dtype=torch.uint8, count=nbytes, offset=offset))
        self.made[key] = data.untyped_storage()
        return self.made[key]

    def close(self):
        self.made.clear()
        if self.mm is not None:
            self.mm.close()


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


# Framing -----------------------------------------------------------------------------------------------------------


def send(sock: socket.socket, message: dict) -> None:
    """Send one message (a JSON object whose values may hold tensors)."""
    storages = _Storages()
    body = encode(message, storages)
    fd = _write_storages(storages)
    try:
        payload = json.dumps({"m": body, "t": [[off, n] for _, off, n in storages.items]},
                             separators=(",", ":")).encode()
        header = HEADER.pack(len(payload), 0 if fd is None else 1)
        socket.send_fds(sock, [header], [fd] if fd is not None else [])
        sock.sendall(payload)
    finally:
        if fd is not None:
            os.close(fd)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise WireError("the connection ended inside a message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket) -> dict:
    """Receive one message, its tensors rebuilt on the devices named (copies: the sender's memory is not shared)."""
    data, fds, _, _ = socket.recv_fds(sock, HEADER.size, MAX_FDS)
    if not data:
        for fd in fds:
            os.close(fd)
        raise Closed("the connection was closed")
    try:
        if len(data) < HEADER.size:
            data += _recv_exact(sock, HEADER.size - len(data))
        size, nfds = HEADER.unpack(data)
        if size > MAX_JSON or nfds != len(fds):
            raise WireError("a bad message header")
        doc = json.loads(_recv_exact(sock, size))
        if not isinstance(doc, dict) or not isinstance(doc.get("t"), list):
            raise WireError("a bad message")
        table = []
        for entry in doc["t"]:
            if not isinstance(entry, list) or len(entry) != 2:
                raise WireError("a bad storage table")
            table.append((_int(entry[0], "storage offset"), _int(entry[1], "storage size")))
        memory = _Memory(fds[0] if fds else None, table)
        try:
            message = decode(doc.get("m"), memory)
        finally:
            memory.close()
    except (ValueError, TypeError, OverflowError, RuntimeError) as e:
        raise WireError(f"a malformed message ({type(e).__name__}: {e})") from e
    finally:
        for fd in fds:
            os.close(fd)
    if not isinstance(message, dict):
        raise WireError("a message that is not an object")
    return message


def flatten(out) -> list:
    """A call's outputs as they travel and as the checker compares them: lists and tuples flattened, anything else one
    output."""
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in flatten(o)]
    return [out]


def request(sock: socket.socket, message: dict) -> dict:
    send(sock, message)
    return recv(sock)
