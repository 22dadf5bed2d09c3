# kernel-lsp: reference=../../tasks/Convolution/conv1d.py
"""Candidate for tasks/Convolution/conv1d_triton.py (issue 12): the same implicit GEMM, with tl.dot in the input
precision PyTorch's own convolution uses on the device: cuDNN runs fp32 convolutions in TF32 on a GPU by default
(torch.backends.cudnn.allow_tf32), so the kernel does too where that flag is set, and stays IEEE fp32 elsewhere
(the CPU, or a user who turned the flag off). The verifier judges the error against PyTorch's own on the device."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first is what the CPU interpreter runs; on a GPU the autotuner times them all
        triton.Config({"BO": 128, "BL": 64, "BC": 32}, num_warps=4, num_stages=1),
        triton.Config({"BO": 128, "BL": 128, "BC": 32}, num_warps=8, num_stages=2),
        triton.Config({"BO": 64, "BL": 128, "BC": 32}, num_warps=4, num_stages=2),
        triton.Config({"BO": 128, "BL": 128, "BC": 16}, num_warps=8, num_stages=3),
        triton.Config({"BO": 64, "BL": 256, "BC": 16}, num_warps=8, num_stages=2),
    ],
    key=["C_in", "C_out", "L_out", "KS"],
)
@triton.jit
def _conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, C_out, L_out, KS, sxb, sxc, sxl, swo, swi, swk,
                   BO: tl.constexpr, BL: tl.constexpr, BC: tl.constexpr, PRECISION: tl.constexpr):
    """out[b, o, l] = bias[o] + sum_{c, k} w[o, c, k] x[b, c, l + k]: a BOxBL output tile per program,
    reduced over input channels in BC-wide chunks with tl.dot in PRECISION ("tf32" or "ieee")."""
    b = tl.program_id(2).to(tl.int64)
    ro = tl.program_id(0) * BO + tl.arange(0, BO)
    rl = tl.program_id(1) * BL + tl.arange(0, BL)
    rc = tl.arange(0, BC)
    acc = tl.zeros((BO, BL), dtype=tl.float32)
    for k in range(0, KS):
        for c in range(0, C_in, BC):
            w = tl.load(w_ptr + ro[:, None] * swo + (c + rc)[None, :] * swi + k * swk,
                        mask=(ro[:, None] < C_out) & ((c + rc)[None, :] < C_in), other=0.0)
            x = tl.load(x_ptr + b * sxb + (c + rc)[:, None] * sxc + (rl[None, :] + k) * sxl,
                        mask=((c + rc)[:, None] < C_in) & (rl[None, :] < L_out), other=0.0)
            acc = tl.dot(w, x, acc, input_precision=PRECISION)
    acc += tl.load(b_ptr + ro, mask=ro < C_out, other=0.0)[:, None]
    tl.store(out_ptr + b * C_out * L_out + ro[:, None] * L_out + rl[None, :], acc,
             mask=(ro[:, None] < C_out) & (rl[None, :] < L_out))


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, c_in, length = x.shape
        w = self.conv.weight
        c_out, _, ks = w.shape
        l_out = length - ks + 1
        out = torch.empty((batch, c_out, l_out), dtype=x.dtype, device=x.device)
        grid = lambda meta: (triton.cdiv(c_out, meta["BO"]), triton.cdiv(l_out, meta["BL"]), batch)
        _conv1d_kernel[grid](x, w, self.conv.bias, out, c_in, c_out, l_out, ks, x.stride(0), x.stride(1),
                             x.stride(2), w.stride(0), w.stride(1), w.stride(2),
                             PRECISION="tf32" if x.is_cuda and torch.backends.cudnn.allow_tf32 else "ieee")
        return out
