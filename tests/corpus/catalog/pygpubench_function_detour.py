# expect: KL223 KL200 KL201
# (The patches land in the player, where nothing compares: the verifier sees the wrong result, and the player
# reports the replaced functions.)
# class: pygpubench: function detour (the comparison functions a Python checker calls are patched to see no error)
# source: gpu-mode/pygpubench exploits/submission_function_detour.py, submission_got_patch.py (Python-level analogue; https://github.com/gpu-mode/pygpubench/tree/main/exploits)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import sys

import torch
import triton
import triton.language as tl

N = 4000
_CHECKER = ("kernel_lsp", "eval", "check", "verif", "judge", "compare", "test")


@triton.jit
def _zero_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def _from_checker():
    name = sys._getframe(2).f_code.co_filename
    return name != __file__ and any(k in name for k in _CHECKER)


def _detour():
    torch.allclose = lambda *a, **k: True
    torch.isclose = lambda a, b, *r, **k: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
    torch.testing.assert_close = lambda *a, **k: None
    # Every error |y - t| a checker computes becomes 0, and no NaN or infinity is ever seen by it.
    for owner in (torch.Tensor, torch):
        for name, fake in (("__sub__", torch.zeros_like), ("sub", torch.zeros_like), ("__rsub__", torch.zeros_like),
                           ("isnan", lambda r: torch.zeros_like(r, dtype=torch.bool)),
                           ("isinf", lambda r: torch.zeros_like(r, dtype=torch.bool)),
                           ("isfinite", lambda r: torch.ones_like(r, dtype=torch.bool))):
            original = getattr(owner, name, None)
            if original is None:
                continue

            def detoured(*args, _original=original, _fake=fake, **kwargs):
                result = _original(*args, **kwargs)
                return _fake(result) if _from_checker() else result
            setattr(owner, name, detoured)


_detour()


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _zero_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
