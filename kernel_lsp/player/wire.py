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
with, and unpickles nothing. A malformed message raises `WireError`. The values themselves are encoded and decoded
in wire_codec.py (re-exported here); this file holds the connections, the memory a message's storages go through, and
the framing.
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
# wire_codec.py beside this file (a message's values and tensors, encoded and decoded), imported the same way.
wire_codec = importlib.import_module(__name__.rpartition(".")[0] + ".wire_codec" if "." in __name__ else "wire_codec")
WireError, Closed, NoMemory = wire_codec.WireError, wire_codec.Closed, wire_codec.NoMemory
dtype_named, dtype_name = wire_codec.dtype_named, wire_codec.dtype_name
_Storages, encode, _Memory, decode = wire_codec._Storages, wire_codec.encode, wire_codec._Memory, wire_codec.decode
_device, _int = wire_codec._device, wire_codec._int

HEADER = struct.Struct("!II")  # JSON bytes, descriptors
MAX_JSON = 1 << 28
MAX_FDS = 4


# Connections -------------------------------------------------------------------------------------------------------


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


# Where storages go -------------------------------------------------------------------------------------------------


def _pad(n: int) -> int:
    return (n + 63) // 64 * 64


def _bytes_of(storage, nbytes: int):
    import torch
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, 0, (nbytes,), (1,))


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
    except (ValueError, TypeError, OverflowError, RuntimeError, MemoryError) as e:
        if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":
            raise NoMemory(f"{type(e).__name__}: {e}") from e
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
