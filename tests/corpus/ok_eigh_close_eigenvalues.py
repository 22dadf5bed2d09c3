# expect: clean
# class: eigenvectors of close but unequal eigenvalues (random symmetric matrices): they turn by as much as the
# inputs' rounding over the gaps between the values, and PyTorch's one float32 result is a noisy measure of that;
# the reference's spread (its move when the inputs move by an ulp) is the budget there too (a KL200 on 9 of 2048
# elements, 6x over PyTorch's own error, before)
# kernel-lsp: entry=eigh reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

B, N = 8, 16


@triton.jit
def _reversed_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[b, i, j] = A[b, n - 1 - i, n - 1 - j] for the symmetric A whose lower triangle is a[b] (the triangle eigh
    reads); one matrix b per program."""
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < n) & (cols < n)
    ri, rj = n - 1 - rows, n - 1 - cols
    hi, lo = tl.maximum(ri, rj), tl.minimum(ri, rj)
    x = tl.load(a_ptr + b * n * n + hi * n + lo, mask=mask, other=0.0)
    tl.store(out_ptr + b * n * n + rows * n + cols, x, mask=mask)


def eigh(a):
    """torch.linalg.eigh(a) (the lower triangle): the eigenvalues ascending and orthonormal eigenvectors, computed on
    the matrix with its rows and columns reversed, the eigenvectors' rows reversed back."""
    a = a.contiguous()
    n = a.shape[-1]
    rev = torch.empty_like(a)
    _reversed_kernel[(a.shape[0],)](a, rev, n, BLOCK=triton.next_power_of_2(n))
    s, w = torch.linalg.eigh(rev)
    return s, w.flip(-2)


def ref(a):
    return torch.linalg.eigh(a)


def make_inputs():
    x = torch.randn(B, N, N)
    return [x + x.mT]
