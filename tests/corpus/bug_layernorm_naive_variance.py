# expect: KL200
# class: a layer norm whose variance is E[x^2] - E[x]^2 in fp32: right on centred rows, about 400 times PyTorch's error
# on rows with a large common offset (cancellation)
# kernel-lsp: entry=layer_norm reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 256
EPS = 1e-5


@triton.jit
def _layer_norm_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.sum(x * x, axis=0) / n_cols - mean * mean
    y = (x - mean) / tl.sqrt(var + eps)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def layer_norm(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _layer_norm_kernel[(x.shape[0],)](x, out, x.shape[1], EPS, BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def ref(x):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=EPS)


def make_inputs():
    return [torch.randn(ROWS, COLS)]
