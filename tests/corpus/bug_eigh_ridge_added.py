# expect: KL200
# class: a ridge added "for stability" (1e-3 on the diagonal): every eigenvalue 1e-3 too large, the vectors unchanged;
# the budget from the reference's spread (sign-free outputs) still leaves the values' error far outside it
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
    rev.diagonal(dim1=-2, dim2=-1).add_(1e-3)
    s, w = torch.linalg.eigh(rev)
    return s, w.flip(-2)


def ref(a):
    return torch.linalg.eigh(a)


def make_inputs():
    x = torch.randn(B, N, N)
    return [x + x.mT]
