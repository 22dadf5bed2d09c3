# expect: KL210:warning
# class: inline assembly, which Triton's CPU interpreter cannot run: "cannot be verified on the CPU", not a failure
# kernel-lsp: entry=negate reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _negate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.inline_asm_elementwise("neg.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=offs < n)


def negate(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _negate_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def ref(x):
    return -x


def make_inputs():
    return [torch.randn(N)]
