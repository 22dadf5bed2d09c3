# expect: KL223 KL205 KL104
# (The player sends the output as its storage holds it: no look of the checker runs the kernel, which is never
# launched, KL104, and the result came without a launch, KL205. The methods it replaces on torch.Tensor are watched
# functions: KL223.)
# class: gpu-mode: lazy output (a plain tensor is returned unfilled; Tensor methods are overridden so the checker's first look runs the kernel)
# source: gpu-mode/reference-kernels issue #162 "Lazy output (subclass / instance override)" and PR #161 (https://github.com/gpu-mode/reference-kernels/issues/162)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 4000
_pending = {}  # id(output) -> (input, output): solves deferred to whoever looks first


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


def _settle(t):
    job = _pending.pop(id(t), None)
    if job is not None and job[1] is t:
        x, out = job
        _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)


def _override(name):
    original = getattr(torch.Tensor, name)

    def settled_first(self, *args, **kwargs):
        if _pending:
            _settle(self)
        return original(self, *args, **kwargs)
    setattr(torch.Tensor, name, settled_first)


for _name in ("detach", "clone", "cpu", "double", "float", "to", "reshape", "view", "contiguous", "numpy",
              "tolist", "item", "__getitem__", "__sub__", "sub", "__eq__", "ne", "eq", "equal", "abs",
              "isnan", "isfinite", "flatten", "__array__"):
    _override(_name)


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _pending[id(out)] = (x, out)  # the solve happens later, outside the caller's timing
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
