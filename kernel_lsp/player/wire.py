"""The wire between the checker and the player: framed JSON messages over a Unix socket, tensors by memory.

Standard library and torch only, and no import of the package around it: the player runs this file as a plain
module beside its own.

A message is a JSON object. Tensors inside it travel as their storages, each distinct storage once (two views of one
storage arrive as two views of one storage: aliasing survives). CPU storages are copied into one anonymous memory
file (memfd) per message whose descriptor is passed with the message (SCM_RIGHTS). CUDA storages, once the other side
has said it can map device memory (`lend_device`), are copied device to device into the sender's arena on that
connection (devmem.py: an allocation of its own, lent once by descriptor, grown when a message needs more); else they
go through the memfd too. The receiver copies what it needs out of either into tensors of its own, on the device
named: nothing touches a file system, and no memory of the sender's is shared beyond what it sent.

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
import importlib
import weakref

# devmem.py beside this file: a sibling in the package, or a plain module in the player's folder (no relative import:
# a plain file has no package).
devmem = importlib.import_module(__name__.rpartition(".")[0] + ".devmem" if "." in __name__ else "devmem")

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


class _Conn:
    """What one connection keeps: the arenas this side lends on it (by device), the other side's arenas mapped here
    (by device: its id and mapping), and whether the other side can map device memory."""

    def __init__(self):
        self.peer_maps = False
        self.lent: dict[int, devmem.Arena] = {}
        self.mapped: dict[int, tuple[int, devmem.Mapping]] = {}
        self.made = 0

    def close(self) -> None:
        for arena in self.lent.values():
            arena.close()
        for _, mapping in self.mapped.values():
            mapping.close()
        self.lent.clear()
        self.mapped.clear()


_CONNS: "weakref.WeakKeyDictionary[socket.socket, _Conn]" = weakref.WeakKeyDictionary()


def _conn(sock: socket.socket) -> _Conn:
    conn = _CONNS.get(sock)
    if conn is None:
        conn = _CONNS[sock] = _Conn()
        weakref.finalize(sock, conn.close)
    return conn


def lend_device(sock: socket.socket) -> None:
    """The other side of `sock` can map device memory: CUDA storages go to it through this side's arena."""
    _conn(sock).peer_maps = True


def lends_device(sock: socket.socket) -> bool:
    """Whether CUDA storages sent on `sock` go through an arena (both sides can)."""
    conn = _CONNS.get(sock)
    return bool(conn and conn.peer_maps)


def forget(sock: socket.socket) -> None:
    """Release what the connection kept (arenas lent, mappings made); the socket's owner calls it on closing."""
    conn = _CONNS.pop(sock, None)
    if conn is not None:
        conn.close()


def _pad(n: int) -> int:
    return (n + 63) // 64 * 64


def _bytes_of(storage, nbytes: int):
    import torch
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, 0, (nbytes,), (1,))


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


def _place(storages: _Storages, conn: _Conn | None) -> tuple[list, int, dict[int, int]]:
    """Where each storage goes: (storage, arena's device or None for the memfd, offset, nbytes) in order, the memfd's
    size, and the bytes each device's arena needs."""
    table, size, need = [], 0, {}
    for storage, nbytes in storages.items:
        device = storage.device
        if device.type == "cuda" and conn is not None and conn.peer_maps and devmem.unavailable(device.index) is None:
            table.append((storage, device.index, need.get(device.index, 0), nbytes))
            need[device.index] = need.get(device.index, 0) + _pad(nbytes)
        else:
            table.append((storage, None, size, nbytes))
            size += _pad(nbytes)
    return table, size, need


def _write_arenas(table: list, need: dict[int, int], conn: _Conn) -> list[dict]:
    """Copy the device storages into the connection's arenas (a bigger one lent where a message needs it); the
    arenas' entries of the message, a new one's with its descriptor (`fd`)."""
    import torch
    entries = []
    for index, nbytes in need.items():
        arena = conn.lent.get(index)
        fresh = arena is None or arena.size < nbytes
        if fresh:
            size = max(nbytes, 2 * arena.size if arena is not None else 0, 1 << 21)
            if arena is not None:
                del conn.lent[index]
                arena.close()  # the other side's mapping keeps it until it maps the new one
            arena = devmem.Arena(index, size)
            conn.made += 1
            arena.id = conn.made
            conn.lent[index] = arena
        view = arena.view()
        for storage, where, offset, n in table:
            if where == index and n:
                view[offset: offset + n].copy_(_bytes_of(storage, n))
        del view
        torch.cuda.current_stream(index).synchronize()  # written before the message says so
        entries.append({"id": arena.id, "device": index, "size": arena.size, "fd": arena.fd if fresh else None})
    return entries


def _write_memfd(table: list, size: int) -> int | None:
    """A memfd holding the host-bound storages' bytes at their offsets; None when there are none."""
    import torch
    if not any(where is None for _, where, _, _ in table):
        return None
    fd = os.memfd_create("buf", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(1, size))
        with mmap.mmap(fd, max(1, size)) as mm:
            whole = torch.frombuffer(mm, dtype=torch.uint8)
            for storage, where, offset, nbytes in table:
                if where is None and nbytes:
                    whole[offset: offset + nbytes].copy_(_bytes_of(storage, nbytes))  # from a GPU too: one copy
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


# Framing -----------------------------------------------------------------------------------------------------------


def send(sock: socket.socket, message: dict) -> None:
    """Send one message (a JSON object whose values may hold tensors)."""
    storages = _Storages()
    body = encode(message, storages)
    conn = _CONNS.get(sock)
    table, size, need = _place(storages, conn)
    arenas: list[dict] = []
    if need:
        try:
            arenas = _write_arenas(table, need, conn)
        except devmem.DeviceMemoryError:  # no arena for this message (out of memory): all of it by memfd
            table, size, need = _place(storages, None)
    fd = _write_memfd(table, size)
    try:
        fds = [] if fd is None else [fd]
        doc: dict = {"m": body, "t": []}
        for arena in arenas:
            if arena["fd"] is not None:
                fds.append(arena["fd"])
                arena["fd"] = len(fds) - 1
        number = {a["device"]: i + 1 for i, a in enumerate(arenas)}
        doc["t"] = [[off, n] if where is None else [off, n, number[where]] for _, where, off, n in table]
        if fd is not None:
            doc["f"] = 0
        if arenas:
            doc["d"] = arenas
        payload = json.dumps(doc, separators=(",", ":")).encode()
        header = HEADER.pack(len(payload), len(fds))
        socket.send_fds(sock, [header], fds)
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


def _mappings(sock: socket.socket, entries, fds: list[int]) -> list:
    """The arenas a message names, mapped here (a newly lent one replaces the one mapped before for its device)."""
    if entries is None:
        return []
    if not isinstance(entries, list) or len(entries) > MAX_FDS:
        raise WireError("a bad arena list")
    conn = _conn(sock)
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise WireError("a bad arena entry")
        ident, index, size = _int(entry.get("id"), "arena id"), entry.get("device"), _int(entry.get("size"), "size")
        _device(f"cuda:{_int(index, 'arena device')}")
        k = entry.get("fd")
        if k is not None:
            if type(k) is not int or not 0 <= k < len(fds):
                raise WireError("an arena without its descriptor")
            try:
                mapping = devmem.Mapping(fds[k], index, size)
            except devmem.DeviceMemoryError as e:
                raise WireError(f"an arena that cannot be mapped ({e})") from e
            old = conn.mapped.pop(index, None)
            if old is not None:
                old[1].close()
            conn.mapped[index] = (ident, mapping)
        held = conn.mapped.get(index)
        if held is None or held[0] != ident:
            raise WireError(f"an arena not lent on this connection ({ident})")
        out.append(held[1])
    conn.peer_maps = True  # it lends device memory, so it maps it too (devmem.unavailable tried both)
    return out


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
        mappings = _mappings(sock, doc.get("d"), fds)
        table = []
        for entry in doc["t"]:
            if not isinstance(entry, list) or len(entry) not in (2, 3):
                raise WireError("a bad storage table")
            where = _int(entry[2], "arena number", 1) if len(entry) == 3 else 0
            if where > len(mappings):
                raise WireError("a storage in no arena")
            table.append((_int(entry[0], "storage offset"), _int(entry[1], "storage size"), where))
        memfd = doc.get("f")
        if memfd is not None and (type(memfd) is not int or not 0 <= memfd < len(fds)):
            raise WireError("a bad memory descriptor")
        memory = _Memory(fds[memfd] if memfd is not None else None, table, mappings)
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
