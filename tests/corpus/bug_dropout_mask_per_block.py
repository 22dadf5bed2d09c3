# expect: KL200
# class: a dropout whose random offsets leave out the program id: every 1024-element block draws the same mask
# kernel-lsp: entry=dropout reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.25


@triton.jit
def _k(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, tl.arange(0, BLOCK)) >= p, x / (1 - p), 0.0), mask=mask)


def dropout(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _k[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), seed, P, BLOCK=1024)
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return torch.where(torch.rand(x.shape, generator=g, device=x.device) >= P, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(64, 200), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
