# expect: KL206
# class: right for its first 28 calls in a process, then half the work: more calls than the verifier (about 18) and
# the fixed evidence runs (about 20) make, fewer than with the soak's (12 to 24 more, the last one always judged)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 2000


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


_calls = [0]


def relu(x):
    _calls[0] += 1
    x = x.contiguous()
    out = torch.zeros_like(x)
    n = x.numel() if _calls[0] <= 28 else x.numel() // 2
    _relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
