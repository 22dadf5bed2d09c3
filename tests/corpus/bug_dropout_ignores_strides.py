# expect: KL200
# class: a random op whose output does not follow its input (a dropout that reads a transposed input as if contiguous)
# kernel-lsp: entry=dropout reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.1
ROWS, COLS = 96, 160


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # x's memory in its own order: right only when x is contiguous
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def dropout(x, seed):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _dropout_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), seed, P, BLOCK=1024)
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return torch.where(torch.rand(x.shape, generator=g, device=x.device) >= P, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
