# expect: KL200 KL201
# The thread looks for the job's events among this process's open files to rewrite them without their error lines.
# The worker sends its events through a socket (run/client.py EventChannel), which is no file it can find or
# rewrite: the verifier's findings reach the parent. Once, when events went to a file, a run came out clean.
# class: pygpubench: background thread + fd rewrite (the result file is rewritten without its error lines; each of its outcomes is a catch)
# source: gpu-mode/pygpubench exploits/submission_thread_fd.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_thread_fd.py)
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

N = 4000


@triton.jit
def _zero_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


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


def _scrub(fd):
    try:
        with open(os.readlink(f"/proc/self/fd/{fd}"), encoding="utf-8") as f:
            lines = f.readlines()
        kept = [line for line in lines if not _is_error(line)]
        if len(kept) != len(lines):
            os.ftruncate(fd, 0)
            os.write(fd, "".join(kept).encode())
    except OSError:
        pass


def _watch():
    while True:
        for fd in _result_fds():
            _scrub(fd)
        time.sleep(0.001)


threading.Thread(target=_watch, daemon=True).start()
atexit.register(lambda: [_scrub(fd) for fd in _result_fds()])


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _zero_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
