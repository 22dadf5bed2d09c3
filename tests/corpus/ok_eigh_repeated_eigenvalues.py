# expect: clean
# class: eigenvalues that repeat (a block-diagonal matrix of eight equal 2x2 blocks: each eigenvalue eight times): any
# orthonormal basis of a repeated eigenvalue's eigenvectors is right, and the implementation (eigh of the matrix with
# its rows and columns reversed, reversed back) returns another basis than LAPACK's
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
    x = torch.randn(B, 2, 2)
    blocks = x @ x.mT + 0.1 * torch.eye(2)
    return [torch.stack([torch.block_diag(*[blk] * (N // 2)) for blk in blocks])]
