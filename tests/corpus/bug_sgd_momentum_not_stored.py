# expect: KL200 KL201
# class: an input the reference updates in place left as it was
# kernel-lsp: entry=sgd_step reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000
LR, MOMENTUM = 0.01, 0.9


@triton.jit
def _sgd_kernel(p_ptr, g_ptr, buf_ptr, n, lr_inv, momentum, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    buf = momentum * tl.load(buf_ptr + offs, mask=mask) + tl.load(g_ptr + offs, mask=mask)
    # the momentum buffer is never written back
    # p - buf / 100 rounds differently from PyTorch's p + (-0.01) * buf in some elements, by under an ulp
    tl.store(p_ptr + offs, tl.load(p_ptr + offs, mask=mask) - buf / lr_inv, mask=mask)


def sgd_step(p, g, buf):
    """Updates p and buf in place, like torch.optim.SGD."""
    pc, bc = p.contiguous(), buf.contiguous()
    _sgd_kernel[(triton.cdiv(p.numel(), 1024),)](pc, g.contiguous(), bc, p.numel(), 1 / LR, MOMENTUM, BLOCK=1024)
    for t, c in ((p, pc), (buf, bc)):
        if c.data_ptr() != t.data_ptr():
            t.copy_(c)


def ref(p, g, buf):
    buf.mul_(MOMENTUM).add_(g)
    p.add_(buf, alpha=-LR)


def make_inputs():
    return [torch.randn(N), torch.randn(N), torch.randn(N)]
