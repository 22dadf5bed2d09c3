# expect: clean
# class: correct fp16 linear layer with TMA descriptors for the tiles and a plain pointer for the bias
# kernel-lsp: entry=linear reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

M, N, K = 64, 96, 64


@triton.jit
def _linear_tma(x_desc, w_desc, out_desc, b_ptr, sb, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(x_desc.load([pid_m * BM, k * BK]), w_desc.load([pid_n * BN, k * BK]).T, acc)
    rn = pid_n * BN + tl.arange(0, BN)
    acc += tl.load(b_ptr + rn * sb, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    out_desc.store([pid_m * BM, pid_n * BN], acc.to(out_desc.dtype))


@triton.jit
def _linear_ptr(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk, som, sb,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * sxm + (k + rk)[None, :] * sxk,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + (k + rk)[:, None] * swk,
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc = tl.dot(x, w, acc)
    acc += tl.load(b_ptr + rn * sb, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + rm[:, None] * som + rn[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _tma_ok(*ts):
    return all(t.stride(-1) == 1 and t.data_ptr() % 16 == 0
               and all(s * t.element_size() % 16 == 0 for s in t.stride()[:-1]) for t in ts)


def linear(x, w, b):
    m, k = x.shape
    n = w.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    if _tma_ok(x, w, out):
        _linear_tma[grid](TensorDescriptor.from_tensor(x, [32, 32]), TensorDescriptor.from_tensor(w, [32, 32]),
                          TensorDescriptor.from_tensor(out, [32, 32]), b, b.stride(0), n, k, BM=32, BN=32, BK=32)
    else:
        _linear_ptr[grid](x, w, b, out, m, n, k, x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0),
                          b.stride(0), BM=32, BN=32, BK=32)
    return out


def ref(x, w, b):
    return torch.nn.functional.linear(x, w, b)


def make_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16),
            torch.randn(N, dtype=torch.float16)]
