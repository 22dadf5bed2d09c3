# expect: KL200
# class: a dropout returning its mask, drawn at offsets one block off from the mask it applied
# kernel-lsp: entry=dropout_with_mask reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.25


@triton.jit
def _k(x_ptr, out_ptr, mask_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)
    keep_saved = tl.rand(seed, offs + BLOCK) >= p
    tl.store(mask_ptr + offs, keep_saved.to(tl.float32), mask=m)


def dropout_with_mask(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    mask = torch.empty_like(xc)
    _k[(triton.cdiv(xc.numel(), 1024),)](xc, out, mask, xc.numel(), seed, P, BLOCK=1024)
    return out, mask


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    keep = torch.rand(x.shape, generator=g, device=x.device) >= P
    return torch.where(keep, x / (1 - P), torch.zeros_like(x)), keep.to(x.dtype)


def make_inputs():
    return [torch.randn(64, 200), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
