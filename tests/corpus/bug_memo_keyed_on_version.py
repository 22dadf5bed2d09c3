# expect: KL206
# class: a result remembered per input tensor and its version counter: right whenever the caller changes its inputs
# with torch operations, stale when a kernel (or `.data`) refills them in place, which the counter does not see
# kernel-lsp: entry=gelu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 2048


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


_memo = {}


def gelu(x):
    key = (id(x), x._version)  # the memo holds x itself, so its id is never another tensor's
    if key in _memo:
        return _memo[key][1].clone()
    xc = x.contiguous()
    out = torch.empty_like(xc)
    n = xc.numel()
    _gelu_kernel[(triton.cdiv(n, 512),)](xc, out, n, BLOCK=512)
    _memo[key] = (x, out.clone())
    return out


def ref(x):
    return torch.nn.functional.gelu(x)


def make_inputs():
    return [torch.randn(N)]
