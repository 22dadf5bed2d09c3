"""A bare JSON-RPC peer over the server's pipes, for what a polite client never does: vanish mid-request,
send bytes that are not UTF-8, or save before its changes arrive. Also the process census the tests use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


def verification_ended(uri: str):
    """A match for `RawClient.wait`: the kernelLsp/status that ends a verification of `uri` that ran to its end. A run
    that a later one replaced also ends "idle", as cancelled and with nothing published: it does not match."""
    return lambda m: (m.get("method") == "kernelLsp/status" and m["params"]["uri"] == uri
                      and m["params"]["state"] == "idle" and m["params"].get("verified")
                      and not m["params"].get("cancelled"))


def kernel_lsp_processes() -> dict[int, str]:
    """pid -> kind for every worker ("job": cold or forked) and warm zygote ("warm") alive now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            comm = (entry / "comm").read_bytes().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":
            continue  # a zombie is dead; only its parent has not reaped it yet
        if comm == b"kernel-lsp-job" or b"kernel_lsp.run.child" in cmd:
            found[int(entry.name)] = "job"
        elif comm == b"kernel-lsp-warm" or b"kernel_lsp.run.zygote" in cmd:
            found[int(entry.name)] = "warm"
    return found


def wait_gone(pids: set[int], timeout: float = 15.0) -> bool:
    """True once none of `pids` is a live kernel-lsp worker or zygote; False if some still are at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not set(pids) & set(kernel_lsp_processes()):
            return True
        time.sleep(0.05)
    return False


def parents() -> dict[int, int]:
    """pid -> parent pid for every process now, zombies included (from /proc)."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return parent


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` now, zombies included (a zombie child has not been reaped yet)."""
    return {child for child, parent in parents().items() if parent == pid}


def alive(pid: int) -> bool:
    """`pid` is a process that has not ended (a zombie has ended; only its parent has not reaped it yet)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_ended(pid: int, timeout: float = 10.0) -> bool:
    """True once `pid` has ended (see `alive`); False if it still runs at the timeout."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now (by walking /proc's parent links)."""
    parent = parents()
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


class RawClient:
    """`env` is added to this process's environment (a None value removes the name); `stderr` is where the server's
    goes. `stray` keeps any byte on the server's stdout outside a framed message."""

    def __init__(self, root: Path, env: dict | None = None, stderr=subprocess.DEVNULL):
        env = {k: v for k, v in dict(os.environ, **(env or {})).items() if v is not None}
        self.proc = subprocess.Popen([sys.executable, "-m", "kernel_lsp.cli", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr, cwd=root, env=env)
        self.messages: list[dict] = []
        self.stray = b""
        self._lock = threading.Condition()
        self._next = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    self.stray += header
                    return
                header += byte
            if not header.lower().startswith(b"content-length"):
                self.stray += header  # something else printed on the protocol's stream
            lengths = [int(line.split(b":")[1]) for line in header.split(b"\r\n")
                       if line.lower().startswith(b"content-length")]
            if not lengths:
                continue
            body = json.loads(out.read(lengths[0]))
            if body.get("method") in ("workspace/configuration", "window/workDoneProgress/create",
                                      "client/registerCapability") and "id" in body:
                self.send_raw(json.dumps({"jsonrpc": "2.0", "id": body["id"],
                                          "result": [None] if body["method"] == "workspace/configuration" else None}).encode())
            with self._lock:
                self.messages.append(body)
                self._lock.notify_all()

    def send_raw(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode())

    def request(self, method: str, params: dict) -> int:
        rid = self._next
        self._next += 1
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        return rid

    def wait(self, match, timeout: float = 60.0, start: int = 0) -> dict:
        """The first message (from index `start`) that matches; woken by each arrival, so timing is exact."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while time.monotonic() < deadline:
                for m in self.messages[start:]:
                    if match(m):
                        return m
                start = len(self.messages)
                self._lock.wait(timeout=max(0.0, deadline - time.monotonic()))
        raise AssertionError(f"no matching message in {timeout} s; got {[m.get('method', m.get('id')) for m in self.messages]}")

    def response(self, rid: int, timeout: float = 60.0) -> dict:
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def initialize(self, root: Path, process_id: int | None = None) -> None:
        rid = self.request("initialize", {"processId": process_id, "rootUri": root.as_uri(), "capabilities": {
            "window": {"workDoneProgress": True}, "workspace": {"configuration": True}}})
        self.response(rid, timeout=30)
        self.notify("initialized", {})

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version,
            "text": path.read_text() if text is None else text}})
        return uri
