# expect: KL221 | KL205 KL104 | KL205
# class: gpu-mode: file replay (results saved to a file keyed by the input's bytes, replayed by later calls and later processes)
# (KL205 KL104: a replay entry another check of this file wrote in the last 120 s is found: no launch at all; KL205
# alone: entries for some of the inputs only, the capture's launch still made. The sandbox leaves the Triton cache
# writable, so two checks within TTL on one machine share it.)
# source: gpu-mode/reference-kernels issue #162 "In-process cache / file replay" (a /dev/shm replay) and PR #160 (https://github.com/gpu-mode/reference-kernels/issues/162)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import hashlib
import os
import tempfile
import time

import torch
import triton
import triton.language as tl

N = 4000
TTL = 120.0  # seconds a replay entry is trusted


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def _replay_dir():
    """The first folder this process may write that outlives it: /dev/shm, then a compile cache a sandbox must
    leave writable, then the temporary folder."""
    triton_cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
    for base in ("/dev/shm", triton_cache, tempfile.gettempdir()):
        path = os.path.join(base, ".relu-replay")
        try:
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, ".probe")
            with open(probe, "w") as f:
                f.write("")
            return path
        except OSError:
            continue
    return None


def relu(x):
    x = x.contiguous()
    folder = _replay_dir()
    digest = hashlib.blake2b(x.detach().cpu().numpy().tobytes(), digest_size=16).hexdigest()
    path = os.path.join(folder, f"{digest}-{x.numel()}-{x.dtype}.pt") if folder else None
    if path and os.path.exists(path) and time.time() - os.path.getmtime(path) < TTL:
        return torch.load(path).to(x.device)  # replayed: no launch
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    if path:
        try:
            torch.save(out.cpu(), path)
        except OSError:
            pass
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
