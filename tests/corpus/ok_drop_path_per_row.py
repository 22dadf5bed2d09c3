# expect: clean
# class: a random op whose one draw moves a whole row (stochastic depth: each sample kept or zeroed): its distribution wanders from draw to draw
# kernel-lsp: entry=drop_path reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
ROWS, COLS = 24, 300
P_DROP = 0.2


@triton.jit
def _drop_path_kernel(x_ptr, out_ptr, cols, stride_x, seed, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask)
    keep = tl.rand(seed, row) >= p
    tl.store(out_ptr + row * cols + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def drop_path(x, seed):
    xc = x.contiguous()
    out = torch.empty(xc.shape, dtype=xc.dtype, device=xc.device)
    _drop_path_kernel[(xc.shape[0],)](xc, out, xc.shape[1], xc.stride(0), seed, P_DROP,
                                      BLOCK=triton.next_power_of_2(xc.shape[1]))
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    keep = torch.rand(x.shape[0], 1, generator=g, device=x.device) >= P_DROP
    return torch.where(keep, x / (1 - P_DROP), torch.zeros_like(x))


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
