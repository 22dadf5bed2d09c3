# expect: clean
# class: singular vectors defined up to sign: the implementation takes the SVD of the transposed matrix (a Triton
# transpose, then LAPACK) and swaps its factors, so a pair of singular vectors may come back with the other sign
# than the reference's; either sign is right (U S Vh is the same), judged after each pair's sign is brought to the
# truth's
# kernel-lsp: entry=svd reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

B, M, N = 2, 24, 8


@triton.jit
def _transpose_kernel(a_ptr, out_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[b] = a[b].T for the m x n matrix a[b]; one matrix per program."""
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < m) & (cols < n)
    x = tl.load(a_ptr + b * m * n + rows * n + cols, mask=mask, other=0.0)
    tl.store(out_ptr + b * m * n + cols * m + rows, x, mask=mask)


def svd(a):
    """torch.linalg.svd(a, full_matrices=False), from the SVD of a's transpose: a.T = U2 S Vh2, so a = Vh2.T S U2.T."""
    a = a.contiguous()
    b, m, n = a.shape
    at = torch.empty(b, n, m, device=a.device, dtype=a.dtype)
    _transpose_kernel[(b,)](a, at, m, n, BLOCK_M=triton.next_power_of_2(m), BLOCK_N=triton.next_power_of_2(n))
    u2, s, vh2 = torch.linalg.svd(at, full_matrices=False)
    return vh2.mT, s, u2.mT


def ref(a):
    return torch.linalg.svd(a, full_matrices=False)


def make_inputs():
    return [torch.randn(B, M, N)]
