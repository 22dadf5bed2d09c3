# expect: KL005
# class: pygpubench: replace torch.py (at import, plants a torch.py where a later process would import it; a sandbox must refuse the write)
# source: gpu-mode/pygpubench exploits/submission_replace_torch.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_replace_torch.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import os

import torch
import triton
import triton.language as tl

N = 4000

# The kernel below is correct: the attack is the planted file. With the sandbox it must fail at import.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch.py"), "w") as f:
    f.write("# PWNED\n")


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
