# expect: clean
# class: PyTorch after a launch that needs the kernel's output (the Cholesky factor of the Gram matrix the kernel
# builds): under the interpreter the first call on the problem's own inputs records launches without running them, so
# the factorization met memory no kernel wrote; that call is made again with its launches run, and only its error
# counts (it was a KL105 on a correct kernel)
# kernel-lsp: entry=gram_cholesky reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

B, N, K = 4, 16, 32
LAM = 1.0


@triton.jit
def _gram_kernel(x_ptr, out_ptr, n, k, lam, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[b] = x[b] @ x[b].T + lam * I for the n x k matrix x[b]; one matrix per program."""
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + b * n * k + rows[:, None] * k + ks[None, :], mask=(rows[:, None] < n) & (ks[None, :] < k),
                other=0.0)
    g = tl.dot(x, tl.trans(x), input_precision="ieee")
    g = g + tl.where(rows[:, None] == rows[None, :], lam, 0.0)
    tl.store(out_ptr + b * n * n + rows[:, None] * n + rows[None, :], g,
             mask=(rows[:, None] < n) & (rows[None, :] < n))


def gram_cholesky(x):
    """The lower Cholesky factor of x @ x.T + LAM * I, per matrix of the batch."""
    x = x.contiguous()
    b, n, k = x.shape
    gram = torch.empty(b, n, n, device=x.device, dtype=x.dtype)
    _gram_kernel[(b,)](x, gram, n, k, LAM, BLOCK_N=max(16, triton.next_power_of_2(n)),
                       BLOCK_K=max(16, triton.next_power_of_2(k)))
    return torch.linalg.cholesky(gram)


def ref(x):
    return torch.linalg.cholesky(x @ x.mT + LAM * torch.eye(x.shape[-2], dtype=x.dtype, device=x.device))


def make_inputs():
    return [torch.randn(B, N, K)]
