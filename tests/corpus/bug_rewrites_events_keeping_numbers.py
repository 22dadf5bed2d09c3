# expect: KL200 KL201 KL223
# class: checker channel rewrite: the job's events, rewritten at exit with each error line made harmless and every line's number kept, and os._exit replaced to do it (the worker's events go through a socket: nothing sent can be taken back)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import atexit
import fcntl
import json
import os
import stat
import threading
import time

import torch
import triton
import triton.language as tl

N = 4096


@triton.jit
def _zero_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    full = (n // BLOCK) * BLOCK
    x = tl.load(x_ptr + offs, mask=offs < full, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=offs < full)


def _result_fds():
    """Writable regular files of JSON lines held open by this process: a checker's result channel."""
    fds = []
    for fd in range(3, 256):
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                continue
            if os.readlink(f"/proc/self/fd/{fd}").endswith((".jsonl", ".json", ".txt", ".log")):
                fds.append(fd)
        except OSError:
            continue
    return fds


def _is_error(line):
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    text = json.dumps(msg)
    return msg.get("event") == "finding" or '"error"' in text or "KL2" in text


def _neutral(line):
    msg = json.loads(line)
    seq = msg.get("seq")
    if msg.get("event") == "finding":
        return json.dumps({"event": "stat", "name": "x", "value": 0, "seq": seq}) + "\n"
    if msg.get("event") == "kernel":
        v = (msg.get("facts") or {}).get("verification")
        if v:
            for row in v.get("variants", []):
                row["verdict"] = "ok"
                row["max_abs"] = 0.0
        return json.dumps(msg) + "\n"
    return line


def _scrub(fd):
    try:
        with open(os.readlink(f"/proc/self/fd/{fd}"), encoding="utf-8") as f:
            lines = f.readlines()
        if lines and not lines[-1].endswith("\n"):
            return
        kept = [_neutral(line) if _is_error(line) or '"kernel"' in line else line for line in lines]
        if kept != lines:
            os.ftruncate(fd, 0)
            os.write(fd, "".join(kept).encode())
    except (OSError, ValueError):
        pass


def _watch():
    while True:
        for fd in _result_fds():
            _scrub(fd)
        time.sleep(0.001)


_real_exit = os._exit
_KEPT = [os.dup(fd) for fd in _result_fds()]
import sys
pass  # print("kept", _KEPT, [os.readlink(f"/proc/self/fd/{fd}") for fd in _KEPT], file=sys.stderr)

def _exit(code):
    for fd in _KEPT:
        _scrub(fd)
    _real_exit(code)

os._exit = _exit
atexit.register(lambda: [_scrub(fd) for fd in _KEPT])


def relu(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    _zero_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
