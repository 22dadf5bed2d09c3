# kernel-lsp: reference=../../tasks/Convolution/conv1d.py
"""Candidate (benchmarks/cand17, lost): the task's conv1d (tasks/Convolution/conv1d_triton.py, whose split kernels
it uses) with its three TF32 products as one tl.dot over three times the reduction (the hi and lo parts side by
side in one buffer each), so that the loop has one dot to pipeline."""
import importlib.util
import os

import torch
import triton
import triton.language as tl

_spec = importlib.util.spec_from_file_location(
    "conv1d_task", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tasks/Convolution/conv1d_triton.py"))
_task = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_task)
_split_channels_last, _split_weights = _task._split_channels_last, _task._split_weights

BO, BL, BC, SEC, WARPS, STAGES = 128, 256, 16, 2, 8, 3
TB_L, TB_C = 64, 64


@triton.jit
def _conv1d_kernel(x2_ptr, w2_ptr, b_ptr, out_ptr, C_in, C_out, L, L_out, KS,
                   BO: tl.constexpr, BL: tl.constexpr, BC: tl.constexpr, SEC: tl.constexpr, STAGES: tl.constexpr):
    """out[b, o, l] = bias[o] + sum_{k, c} w[k, o, c] x[b, l + k, c] as w_hi x_lo + w_lo x_hi + w_hi x_hi. The
    reduction is a list of sections of BC channels, three per (channel block, tap): (w_hi, x_lo), (w_lo, x_hi),
    (w_hi, x_hi); each step is one tensor-core product over SEC consecutive sections (one dot in the loop, which the
    compiler can pipeline). x2 = [x_hi; x_lo] (2, B, L, C) and w2 = [w_hi; w_lo] (2, KS, O, C), channels contiguous."""
    b = tl.program_id(2).to(tl.int64)
    ro = tl.program_id(0) * BO + tl.arange(0, BO)
    rl = tl.program_id(1) * BL + tl.arange(0, BL)
    rj = tl.arange(0, SEC * BC)
    n_c = tl.cdiv(C_in, BC)
    n_sec = 3 * KS * n_c
    x_half = tl.num_programs(2).to(tl.int64) * L * C_in
    w_half = KS * C_out * C_in
    acc = tl.zeros((BO, BL), dtype=tl.float32)
    for i in tl.range(0, tl.cdiv(n_sec, SEC), num_stages=STAGES):
        g = i * SEC + rj // BC  # the section of each row of the reduction
        kind = g % 3
        k = (g // 3) % KS  # taps inner: the next tap's x window is this one shifted by a row (L1)
        c = (g // (3 * KS)) * BC + rj % BC
        live = (g < n_sec) & (c < C_in)
        # The hi/lo choice as a product, not tl.where: the compiler then still sees BC contiguous channels per
        # section and copies 16 bytes at a time (with tl.where it fell back to 4).
        w_off = ((kind == 1).to(tl.int32) * w_half + k * C_out * C_in + c)[None, :] + ro[:, None] * C_in
        x_off = (((kind == 0).to(tl.int64) * x_half)[:, None] + b * L * C_in + (rl[None, :] + k[:, None]) * C_in
                 + c[:, None])
        w = tl.load(w2_ptr + w_off, mask=(ro[:, None] < C_out) & live[None, :], other=0.0)
        x = tl.load(x2_ptr + x_off, mask=live[:, None] & (rl[None, :] < L_out), other=0.0, cache_modifier=".ca")
        acc = tl.dot(w, x, acc, input_precision="tf32")
    acc += tl.load(b_ptr + ro, mask=ro < C_out, other=0.0)[:, None]
    tl.store(out_ptr + b * C_out * L_out + ro[:, None] * L_out + rl[None, :], acc,
             mask=(ro[:, None] < C_out) & (rl[None, :] < L_out))


class ModelNew(_task.ModelNew):
    """The task's module (its parameters) with this file's kernel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, c_in, length = x.shape
        w = self.conv.weight
        c_out, _, ks = w.shape
        l_out = length - ks + 1
        x2 = torch.empty((2, batch, length, c_in), dtype=x.dtype, device=x.device)
        _split_channels_last[(triton.cdiv(length, TB_L), triton.cdiv(c_in, TB_C), batch)](
            x, x2[0], x2[1], c_in, length, x.stride(0), x.stride(1), x.stride(2), BLK_L=TB_L, BLK_C=TB_C)
        w2 = torch.empty((2, ks, c_out, c_in), dtype=w.dtype, device=w.device)
        _split_weights[(triton.cdiv(w.numel(), 1024),)](w, w2[0], w2[1], c_out, c_in, ks, w.stride(0), w.stride(1),
                                                        w.stride(2), BLOCK=1024)
        out = torch.empty((batch, c_out, l_out), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(c_out, BO), triton.cdiv(l_out, BL), batch)
        _conv1d_kernel[grid](x2, w2, self.conv.bias, out, c_in, c_out, length, l_out, ks,
                             BO=BO, BL=BL, BC=BC, SEC=SEC, STAGES=STAGES, num_warps=WARPS, num_stages=STAGES)
        return out
