# expect: KL200
# class: the implementation imports kernel-lsp's planner and removes the layout variants from it, so that its
# contiguous-only kernel is never given strided inputs: the planner runs in the checker's process, not the player's
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

try:  # where kernel-lsp is importable (beside its verifier, that verifier plans no layout variant; in the player, a
    import importlib  # copy nothing uses)
    _verifier = importlib.import_module("kernel_lsp.checker.verify.schedule")
    _original = _verifier.plan
    _verifier.plan = lambda *a, **k: [v for v in _original(*a, **k) if v.kind != "layout"]
except Exception:
    pass

N = 4096


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    out = torch.empty_like(x)  # x is read as if contiguous: wrong for strided inputs
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out


def ref(x):
    return x * 2.0


def make_inputs():
    return [torch.randn(N)]
