# expect: clean
# class: correct bf16 tanh-GELU, reference and inputs in a sibling file
# kernel-lsp: entry=gelu reference=gelu_ref.py:gelu_tanh inputs=gelu_ref.py:make_inputs
import torch
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + _tanh(inner))
    tl.store(out_ptr + offs, y.to(tl.bfloat16), mask=mask)


def gelu(x):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    n = xc.numel()
    _gelu_kernel[(triton.cdiv(n, 1024),)](xc, out, n, BLOCK=1024)
    return out
