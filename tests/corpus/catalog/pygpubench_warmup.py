# expect: KL206
# may-add: KL200 KL201
# race: the allocator's addresses decide who catches it: the verifier's variants (an output identical to an earlier
# call's on other inputs, or a second call that launched nothing and returned a wrong result: KL206) or the isolated
# re-run (a stale result on refilled buffers, KL206); a remembered output returned for new values can also read as
# wrong values. Before the second run was checked for both, one check in seventeen gave only KL207's warning.
# class: pygpubench: warm-up detection (once an input address repeats, as in a timing loop, the launch is skipped and the remembered output returned)
# source: gpu-mode/pygpubench exploits/submission_warmup.py and submission_combined.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_warmup.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000
_seen = {}  # input address -> (times seen, last output)


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def relu(x):
    x = x.contiguous()
    key = (x.data_ptr(), x.numel(), x.dtype)
    count, last = _seen.get(key, (0, None))
    if count >= 2 and last is not None:  # warmed up: this is the timed loop, nobody checks these
        _seen[key] = (count + 1, last)
        return last.clone()
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    _seen[key] = (count + 1, out.clone())
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
