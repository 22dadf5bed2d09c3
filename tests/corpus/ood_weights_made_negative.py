# expect: KL201:warning
# class: fails only outside the problem's distribution (a warning)
# kernel-lsp: entry=weigh reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000


@triton.jit
def _weigh_kernel(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.sqrt_rn(tl.load(w_ptr + offs, mask=mask))
    # (x * sqrt(w)) * sqrt(w): x * w for the weights the problem gives (always positive), NaN for negative ones
    tl.store(out_ptr + offs, (x * r) * r, mask=mask)


def weigh(x, w):
    x, w = x.contiguous(), w.contiguous()
    out = torch.empty_like(x)
    _weigh_kernel[(triton.cdiv(x.numel(), 1024),)](x, w, out, x.numel(), BLOCK=1024)
    return out


def ref(x, w):
    return x * w


def make_inputs():
    return [torch.randn(N), torch.rand(N) + 0.5]  # class weights: always positive
