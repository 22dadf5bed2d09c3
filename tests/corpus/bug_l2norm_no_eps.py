# expect: KL201
# class: an L2 normalization without the floor on the norm: an all-zero row gives NaN where PyTorch gives zeros
# kernel-lsp: entry=l2norm reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 96


@triton.jit
def _l2norm_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, x / norm, mask=mask)


def l2norm(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _l2norm_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x):
    return torch.nn.functional.normalize(x, dim=-1)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
