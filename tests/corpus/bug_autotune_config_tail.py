# expect: KL203
# class: one autotune config of four leaves the tail unwritten (the config a run picks decides the verdict)
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256, "VEC": 1}, num_warps=4),
        triton.Config({"BLOCK": 128, "VEC": 1}, num_warps=4),
        triton.Config({"BLOCK": 128, "VEC": 2}, num_warps=4),  # each program covers 256, the grid assumes 128
        triton.Config({"BLOCK": 64, "VEC": 1}, num_warps=2),
    ],
    key=["n"],
)
@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, VEC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # VEC is ignored: programs still cover BLOCK each
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"] * meta["VEC"]),)
    _scale_kernel[grid](x, out, x.numel())
    return out


def ref(x):
    return x * 2.0


def make_inputs():
    return [torch.randn(N)]
