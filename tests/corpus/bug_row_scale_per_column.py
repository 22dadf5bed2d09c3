# expect: KL200
# class: a random op drawing along the wrong dimension (a per-row random scale applied per column)
# kernel-lsp: entry=row_scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
ROWS, COLS = 64, 256


@triton.jit
def _k(x_ptr, out_ptr, C, sx, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < C
    x = tl.load(x_ptr + row * sx + cols, mask=m)
    u = tl.rand(seed, cols)
    tl.store(out_ptr + row * C + cols, x * u, mask=m)


def row_scale(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _k[(xc.shape[0],)](xc, out, xc.shape[1], xc.stride(0), seed, BLOCK=triton.next_power_of_2(xc.shape[1]))
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return x * torch.rand(x.shape[0], 1, generator=g, device=x.device)


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
