# expect: clean
# class: int8 weights dequantized to bf16 in the kernel, then a bf16 tl.dot (the interpreter wrote the integers' bits)
# kernel-lsp: entry=matmul reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl


@triton.jit
def _w8a16(a_ptr, w_ptr, c_ptr, M, N, K, sam, sak, swk, swn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + (k + rk)[:, None] * swk + rn[None, :] * swn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, w.to(tl.bfloat16), acc)  # int8 -> bf16 is exact
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, w):
    m, k = a.shape
    n = w.shape[1]
    c = torch.empty((m, n), dtype=torch.float32, device=a.device)
    _w8a16[(triton.cdiv(m, 32), triton.cdiv(n, 32))](a, w, c, m, n, k, a.stride(0), a.stride(1), w.stride(0),
                                                      w.stride(1), c.stride(0), c.stride(1), BM=32, BN=32, BK=32)
    return c


def ref(a, w):
    return a.float() @ w.float()


def make_inputs():
    return [torch.randn(64, 64).bfloat16(), torch.randint(-127, 128, (64, 64), dtype=torch.int8)]
