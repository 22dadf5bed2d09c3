# expect: KL200
# class: singular vectors whose signs do not pair (U S Vh is not A)
# U from the eigenvectors of A A^T and V from those of A^T A: two decompositions that pick their signs each on its
# own, so U S Vh is not A where a pair's signs differ (each vector is right up to sign on its own); the judge turns
# U's and V's vectors of one singular value together and must catch it, as a reconstruction would
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
    """torch.linalg.svd(a, full_matrices=False) from two symmetric eigenproblems in float64: V from A^T A, U from
    A A^T, S the singular values; the bug: U is not derived from V (U = A V / S), so each keeps its own signs."""
    a = a.contiguous()
    b, m, n = a.shape
    at = torch.empty(b, n, m, device=a.device, dtype=a.dtype)
    _transpose_kernel[(b,)](a, at, m, n, BLOCK_M=triton.next_power_of_2(m), BLOCK_N=triton.next_power_of_2(n))
    a64, at64 = a.double(), at.double()
    k = min(m, n)
    _, v = torch.linalg.eigh(at64 @ a64)
    _, u = torch.linalg.eigh(a64 @ at64)
    v, u = v.flip(-1)[..., :k], u.flip(-1)[..., :k]  # eigh ascends; singular values descend
    s = torch.linalg.svdvals(a64)
    return u.to(a.dtype), s.to(a.dtype), v.mT.to(a.dtype)


def ref(a):
    return torch.linalg.svd(a, full_matrices=False)


def make_inputs():
    return [torch.randn(B, M, N)]
