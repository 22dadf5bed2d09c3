# expect: KL200
# class: a random op whose output does not follow its input (dropout reading x reversed: the pooled distribution is the reference's)
# kernel-lsp: entry=dropout reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.25
ROWS, COLS = 64, 200


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + (n - 1 - offs), mask=mask)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, offs) >= p, x / (1 - p), 0.0), mask=mask)


def dropout(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _dropout_kernel[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), seed, P, BLOCK=1024)
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return torch.where(torch.rand(x.shape, generator=g, device=x.device) >= P, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
