# expect: KL200
# class: a random op drawing one mask for every row (the dropout mask indexed by column only)
# kernel-lsp: entry=dropout2d reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.3
ROWS, COLS = 96, 130


@triton.jit
def _k(x_ptr, out_ptr, R, C, sxr, sxc, seed, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < C
    x = tl.load(x_ptr + row * sxr + cols * sxc, mask=m, other=0.0)
    r = tl.rand(seed, cols)
    tl.store(out_ptr + row * C + cols, tl.where(r >= p, x / (1 - p), 0.0), mask=m)


def dropout2d(x, seed):
    R, C = x.shape
    out = torch.empty((R, C), dtype=x.dtype, device=x.device)
    _k[(R,)](x, out, R, C, x.stride(0), x.stride(1), seed, P, BLOCK=triton.next_power_of_2(C))
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return torch.where(torch.rand(x.shape, generator=g, device=x.device) >= P, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
