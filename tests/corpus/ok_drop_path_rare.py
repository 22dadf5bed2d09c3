# expect: clean
# class: a random op whose seed rarely moves its output (stochastic depth of 2 samples at p = 0.015): the seed is found by what the reference draws
# kernel-lsp: entry=drop_path reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.015


@triton.jit
def _k(x_ptr, out_ptr, per, seed, p, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < per
    x = tl.load(x_ptr + b * per + offs, mask=m)
    keep = tl.rand(seed, b) >= p
    tl.store(out_ptr + b * per + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)


def drop_path(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    per = xc[0].numel()
    _k[(xc.shape[0], triton.cdiv(per, 1024))](xc, out, per, seed, P, BLOCK=1024)
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    keep = torch.rand(x.shape[0], 1, 1, generator=g, device=x.device) >= P
    return torch.where(keep, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(2, 64, 128), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
