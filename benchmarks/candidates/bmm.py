# kernel-lsp: reference=../../tasks/LinearAlgebra/bmm.py
"""Candidate for tasks/LinearAlgebra/bmm_triton.py (issue 12): a persistent kernel over (batch, tile) pairs that
loads tiles through rank-3 TMA descriptors (a [1, BM, BK] block of A[b], so a tile never reads the next batch).
Shapes TMA cannot describe take the pointer kernel of the task."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _bmm_tma_kernel(a_desc, b_desc, c_desc, BATCH, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    NUM_SMS: tl.constexpr):
    """C[b] = A[b] @ B[b], fp32 accumulator; TMA pads loads past the edges with zeros and clips stores."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    per_batch = num_m * num_n
    for tile in tl.range(tl.program_id(0), BATCH * per_batch, NUM_SMS):
        bid = tile // per_batch
        pid_m = (tile % per_batch) // num_n
        pid_n = tile % num_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([bid, pid_m * BM, k * BK]).reshape(BM, BK)
            b = b_desc.load([bid, k * BK, pid_n * BN]).reshape(BK, BN)
            acc = tl.dot(a, b, acc)
        c_desc.store([bid, pid_m * BM, pid_n * BN], acc.to(c_desc.dtype).reshape(1, BM, BN))


@triton.jit
def _bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same product through pointers, for shapes TMA cannot describe; axis 2 of the grid is the batch."""
    bid = tl.program_id(2).to(tl.int64)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + bid * sab + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + bid * sbb + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + bid * scb + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _tma_ok(*tensors) -> bool:
    return all(t.stride(-1) == 1 and t.data_ptr() % 16 == 0
               and all(s * t.element_size() % 16 == 0 for s in t.stride()[:-1]) for t in tensors)


def _num_sms(device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        batch, m, k = a.shape
        n = b.shape[2]
        c = torch.empty((batch, m, n), dtype=a.dtype, device=a.device)
        bm, bn, bk = 128, 128, 64
        if _tma_ok(a, b, c):
            sms = _num_sms(a.device)
            _bmm_tma_kernel[(min(sms, batch * triton.cdiv(m, bm) * triton.cdiv(n, bn)),)](
                TensorDescriptor.from_tensor(a, [1, bm, bk]), TensorDescriptor.from_tensor(b, [1, bk, bn]),
                TensorDescriptor.from_tensor(c, [1, bm, bn]), batch, m, n, k, BM=bm, BN=bn, BK=bk, NUM_SMS=sms,
                num_warps=8, num_stages=4)
        else:
            _bmm_kernel[(triton.cdiv(m, 128), triton.cdiv(n, 128), batch)](
                a, b, c, m, n, k, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1), b.stride(2),
                c.stride(0), c.stride(1), c.stride(2), BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        return c
