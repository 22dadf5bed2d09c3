# expect: clean
# class: correct optimizer step computing 1 - beta in fp32 on the device, as PyTorch's constants would round
# kernel-lsp: reference=ref entry=adam_step inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 3000
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8


@triton.jit
def _adam_kernel(p_ptr, g_ptr, m_ptr, v_ptr, p_out, m_out, v_out, n, lr, beta1, beta2, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask)
    m = beta1 * tl.load(m_ptr + offs, mask=mask) + (1 - beta1) * g  # 1 - beta in fp32: 0.999 is not exact
    v = beta2 * tl.load(v_ptr + offs, mask=mask) + (1 - beta2) * g * g
    tl.store(m_out + offs, m, mask=mask)
    tl.store(v_out + offs, v, mask=mask)
    tl.store(p_out + offs, tl.load(p_ptr + offs, mask=mask) - lr * m / (tl.sqrt_rn(v) + eps), mask=mask)


def adam_step(p, g, m, v):
    p, g, m, v = (t.contiguous() for t in (p, g, m, v))
    outs = [torch.empty_like(p) for _ in range(3)]
    _adam_kernel[(triton.cdiv(p.numel(), 1024),)](p, g, m, v, *outs, p.numel(), LR, BETA1, BETA2, EPS, BLOCK=1024)
    return tuple(outs)


def ref(p, g, m, v):
    m = BETA1 * m + (1 - BETA1) * g
    v = BETA2 * v + (1 - BETA2) * g * g
    return p - LR * m / (torch.sqrt(v) + EPS), m, v


def make_inputs():
    return [torch.randn(N), torch.randn(N), 0.1 * torch.randn(N), torch.rand(N) * 0.01]
