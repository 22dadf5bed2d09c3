# expect: clean
# class: a random mask from torch.rand_like in the reference: its draws must not be the ones its inputs were made from (seeded alike, they were: a correct kernel failed the distribution test)
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
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, offs) >= p, x / (1 - p), 0.0), mask=mask)


def dropout(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
    _dropout_kernel[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), seed, P, BLOCK=1024)
    return out


def ref(x):
    return torch.where(torch.rand_like(x) >= P, x / (1 - P), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(ROWS, COLS)]
