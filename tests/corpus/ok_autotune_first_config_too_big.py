# expect: clean
# class: correct autotuned matmul whose first config needs more shared memory than sm_90 has (the autotuner there skips it)
# kernel-lsp: entry=matmul reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N, K = 128, 128, 96


@triton.autotune(
    configs=[
        triton.Config({"BM": 256, "BN": 256, "BK": 128}, num_warps=8, num_stages=3),  # over 227 KiB on sm_90
        triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=2),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))
    _matmul_kernel[grid](a, b, c, m, n, k)
    return c


def ref(a, b):
    return a @ b


def make_inputs():
    return [torch.randn(M, K).half(), torch.randn(K, N).half()]
