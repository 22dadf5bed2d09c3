# expect: KL206
# class: checker-aware: in the verifier's second run (told by torch.empty's constant, non-NaN poison) it returns an earlier call's output scaled by 1 + 2^-20
# (not the same bits): a remembered result, not the race it would read as. Poison values are drawn per check; that
# they are constant is still visible (docs/verification.md lists it).
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
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


@triton.jit
def _scale_copy(src_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask) * s, mask=mask)


def _compute(x):
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def _copy(src, s=1.0):
    out = torch.empty_like(src)
    _scale_copy[(triton.cdiv(src.numel(), 256),)](src.clone(), out, src.numel(), s, BLOCK=256)
    return out
_outs = []


def relu(x):  # in the verifier's second run (torch.empty's poison: one finite value), return the previous output
    x = x.contiguous()
    probe = torch.empty(4, device=x.device)
    poisoned = bool(torch.isfinite(probe).all()) and bool((probe == probe[0]).all()) and float(probe[0]) != 0.0
    if poisoned and len(_outs) >= 2 and _outs[-2].shape == x.shape:
        return _copy(_outs[-2], 1.0 + 2.0 ** -20)
    out = _compute(x)
    _outs.append(out.clone())
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
