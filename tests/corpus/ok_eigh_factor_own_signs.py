# expect: clean
# class: an output defined up to the sign of each column (eigenvectors scaled by the square roots of their
# eigenvalues), the kernel choosing its own signs (each column's sum made non-negative): either sign is right, and a
# float64 truth and a float32 eigh pick opposite ones for some columns
# kernel-lsp: entry=sqrt_factor reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

B, N = 8, 32


@triton.jit
def _scale_columns_kernel(v_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[b, :, j] = v[b, :, j] * sqrt(max(s[b, j], 0)), its sign chosen so that the column sums to >= 0; one
    matrix b per program."""
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < n) & (cols < n)
    v = tl.load(v_ptr + b * n * n + rows * n + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + b * n + cols, mask=cols < n, other=0.0)
    f = v * tl.sqrt(tl.where(s < 0, 0.0, s))
    sign = tl.where(tl.sum(f, axis=0) < 0, -1.0, 1.0)
    tl.store(out_ptr + b * n * n + rows * n + cols, f * sign[None, :], mask=mask)


def sqrt_factor(a):
    """F with F @ F.mT == A for a symmetric positive semi-definite A: its eigenvectors, each scaled by the square
    root of its eigenvalue (torch.linalg.eigh on the lower triangle, as the reference), column sums non-negative."""
    s, v = torch.linalg.eigh(a)
    v, s = v.contiguous(), s.contiguous()
    out = torch.empty_like(v)
    n = a.shape[-1]
    _scale_columns_kernel[(a.shape[0],)](v, s, out, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(a):
    s, v = torch.linalg.eigh(a)
    return v * s.clamp_min(0).sqrt().unsqueeze(-2)


def make_inputs():
    x = torch.randn(B, N, N)
    return [x @ x.mT / N]
