# expect: KL200
# class: wrong epsilon
# kernel-lsp: entry=layernorm reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 24, 300
EPS = 1e-5


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_row, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, d * rstd * w + b, mask=mask)


def layernorm(x, w, b):
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    _layernorm_kernel[(m,)](x, w.contiguous(), b.contiguous(), out, n, x.stride(0), 1e-6, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


def make_inputs():
    return [torch.randn(M, N), torch.randn(N), torch.randn(N)]
