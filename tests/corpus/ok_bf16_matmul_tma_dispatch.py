# expect: clean
# class: correct bf16 matmul that dispatches: TMA descriptors where strides allow, pointers elsewhere
# kernel-lsp: entry=matmul reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

M, N, K = 1024, 1024, 512


@triton.jit
def _matmul_tma(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def _matmul_ptr(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _tma_ok(*ts):
    return all(t.stride(-1) == 1 and t.data_ptr() % 16 == 0
               and all(s * t.element_size() % 16 == 0 for s in t.stride()[:-1]) for t in ts)


def matmul(a, b):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
    if _tma_ok(a, b, c):
        _matmul_tma[grid](TensorDescriptor.from_tensor(a, [64, 32]), TensorDescriptor.from_tensor(b, [32, 64]),
                          TensorDescriptor.from_tensor(c, [64, 64]), k, BM=64, BN=64, BK=32)
    else:
        _matmul_ptr[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1), BM=64, BN=64, BK=32)
    return c


def ref(a, b):
    return a @ b


def make_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)]
