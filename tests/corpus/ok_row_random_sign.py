# expect: clean
# class: a random op whose one draw moves a whole row (a random sign per row): its dependence on the input wanders from draw to draw
# kernel-lsp: entry=row_sign reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
ROWS, COLS = 24, 300


@triton.jit
def _row_sign_kernel(x_ptr, out_ptr, cols, stride_x, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask)
    sign = tl.where(tl.rand(seed, row) < 0.5, -1.0, 1.0)
    tl.store(out_ptr + row * cols + offs, x * sign, mask=mask)


def row_sign(x, seed):
    xc = x.contiguous()
    out = torch.empty(xc.shape, dtype=xc.dtype, device=xc.device)
    _row_sign_kernel[(xc.shape[0],)](xc, out, xc.shape[1], xc.stride(0), seed,
                                      BLOCK=triton.next_power_of_2(xc.shape[1]))
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    sign = torch.where(torch.rand(x.shape[0], 1, generator=g, device=x.device) < 0.5, -1.0, 1.0)
    return x * sign


def make_inputs():
    return [torch.randn(ROWS, COLS), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
