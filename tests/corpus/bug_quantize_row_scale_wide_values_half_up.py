# expect: KL200
# class: rounding ties through a scale passed as an input tensor (calibrated, one per row), with values wider than the
# dyadic grid's: int8 quantization that rounds halves up where PyTorch rounds them to even. With values up to about 12
# the grid's quantum (1/16) is coarser than every scale it makes (1/128 to 1/32), so x / scale is an integer there;
# only the ties variant, which puts the scales themselves on powers of two, meets halves (clean before it did)
# kernel-lsp: entry=quantize reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

ROWS, COLS = 64, 256


@triton.jit
def _quantize_kernel(x_ptr, scale_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.load(scale_ptr + row)
    q = tl.floor(x / s + 0.5)
    q = tl.minimum(tl.maximum(q, -128.0), 127.0)
    tl.store(out_ptr + row * n_cols + cols, q.to(tl.int8), mask=mask)


def quantize(x, scale):
    """int8 codes of x with one scale per row: round(x / scale), clamped to [-128, 127]."""
    x = x.contiguous()
    out = torch.empty(x.shape, dtype=torch.int8, device=x.device)
    n = x.shape[-1]
    _quantize_kernel[(x.numel() // n,)](x, scale.contiguous(), out, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x, scale):
    return torch.round(x / scale[:, None]).clamp(-128, 127).to(torch.int8)


def make_inputs():
    return [3 * torch.randn(ROWS, COLS), torch.rand(ROWS) * 0.02 + 0.01]  # calibrated scales, one per row
