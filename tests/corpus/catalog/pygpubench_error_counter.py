# expect: KL220 | KL200 | KL200 KL201
# class: pygpubench: error-counter zeroing (a background thread keeps emptying the checker's failure lists)
# source: gpu-mode/pygpubench exploits/submission_error_counter.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_error_counter.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import gc
import threading
import time

import torch
import triton
import triton.language as tl

N = 4000
_targets = []  # lists that hold a checker's recorded errors
_lock = threading.Lock()


@triton.jit
def _zero_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # The fast "kernel": zeros, whatever the input.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def _find_counters():
    """Lists named like error records on objects of the checker's own classes (module name has 'kernel_lsp')."""
    found = []
    for obj in gc.get_objects():
        try:
            if "kernel_lsp" not in (type(obj).__module__ or ""):
                continue
            for name, value in vars(obj).items():
                if isinstance(value, list) and any(k in name for k in ("fail", "finding", "error")):
                    found.append(value)
        except Exception:
            pass
    with _lock:
        _targets[:] = found


def _keep_zeroing():
    while True:
        with _lock:
            for errors in _targets:
                del errors[:]
        time.sleep(0.0005)


threading.Thread(target=_keep_zeroing, daemon=True).start()


def relu(x):
    x = x.contiguous()
    _find_counters()
    out = torch.empty_like(x)
    _zero_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
