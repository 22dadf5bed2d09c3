# expect: KL200
# class: a random op returning two outputs dropped with one mask (q and k), where the reference draws each alone
# kernel-lsp: entry=dropout2 reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.25


@triton.jit
def _k(x_ptr, out_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(tl.rand(seed, offs) >= p, x / (1 - p), 0.0), mask=m)


def _dropout(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    _k[(triton.cdiv(xc.numel(), 1024),)](xc, out, xc.numel(), seed, P, BLOCK=1024)
    return out


def dropout2(q, k, seed):
    return _dropout(q, seed), _dropout(k, seed)


def ref(q, k, seed):
    g = torch.Generator(device=q.device).manual_seed(seed)
    mq = torch.rand(q.shape, generator=g, device=q.device) >= P
    mk = torch.rand(k.shape, generator=g, device=k.device) >= P
    return torch.where(mq, q / (1 - P), torch.zeros_like(q)), torch.where(mk, k / (1 - P), torch.zeros_like(k))


def make_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
