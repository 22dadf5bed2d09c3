# expect: KL300
# (The player's stack holds no result writer: the exploit ends the process that runs it, KL300.)
# class: pygpubench: stack scan (the checker's own result writer is found up the call stack and sent a forged "done")
# source: gpu-mode/pygpubench exploits/submission_stack_sig_scan.py and submission_heap_sig_scan.py (https://github.com/gpu-mode/pygpubench/tree/main/exploits)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import os
import sys

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


def _writers():
    """Objects with an `emit` method among the locals of the frames above (and one attribute level below them)."""
    seen, found = set(), []
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for obj in [value] + [v for v in getattr(value, "__dict__", {}).values()]:
                if id(obj) not in seen and callable(getattr(type(obj), "emit", None)):
                    seen.add(id(obj))
                    found.append(obj)
        frame = frame.f_back
    return found


def _forge_done():
    jobs = next((m for name, m in list(sys.modules.items()) if name.endswith(".jobs") and hasattr(m, "Done")), None)
    for w in _writers():
        try:
            w.emit(jobs.Done() if jobs is not None else {"event": "done"})
        except Exception:
            pass
    os._exit(0)  # the run "ended cleanly", with nothing judged


def relu(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    _relu_kernel[(1,)](x, out, 0, BLOCK=256)
    _forge_done()
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
