# expect: clean
# class: correct fp32 matmul with tl.dot ieee
# kernel-lsp: entry=matmul reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N, K = 70, 50, 90


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    _matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1), BM=32, BN=32, BK=32)
    return c


def ref(a, b):
    return a @ b


def make_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
