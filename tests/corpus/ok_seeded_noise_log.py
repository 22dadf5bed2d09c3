# expect: clean
# class: a seeded random reference (its draws depend on the dtype): the float64 truth cannot share them
# kernel-lsp: entry=noisy_log reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4096


@triton.jit
def _log_kernel(x_ptr, noise_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(noise_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.log(v), mask=mask)  # NaN where the noise made it negative, as torch.log


def noisy_log(x):
    torch.manual_seed(0)
    noise = 0.5 * torch.randn_like(x)  # the same draws as the reference: same seed, same dtype
    x = x.contiguous()
    out = torch.empty_like(x)
    _log_kernel[(triton.cdiv(x.numel(), 1024),)](x, noise.contiguous(), out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    torch.manual_seed(0)
    return torch.log(x + 0.5 * torch.randn_like(x))


def make_inputs():
    return [torch.rand(N)]
