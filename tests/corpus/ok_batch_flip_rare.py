# expect: clean
# class: a random op whose rare draw moves the whole tensor (a batch flipped with probability 0.1): 9 draws of the reference may show no flip
# kernel-lsp: entry=random_hflip reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

KERNEL_LSP_RANDOM = True
P = 0.1


@triton.jit
def _k(x_ptr, out_ptr, R, W, seed, p, BR: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]  # BR rows of W pixels
    cols = tl.arange(0, BLOCK)[None, :]
    m = (rows < R) & (cols < W)
    flip = tl.rand(seed, tl.program_id(0) * 0) < p
    src = tl.where(flip, W - 1 - cols, cols)
    x = tl.load(x_ptr + rows * W + src, mask=m)
    tl.store(out_ptr + rows * W + cols, x, mask=m)


def random_hflip(x, seed):
    xc = x.contiguous()
    out = torch.empty_like(xc)
    W = xc.shape[-1]
    R = xc.numel() // W
    _k[(triton.cdiv(R, 64),)](xc, out, R, W, seed, P, BR=64, BLOCK=triton.next_power_of_2(W))
    return out


def ref(x, seed):
    g = torch.Generator(device=x.device).manual_seed(seed)
    return x.flip(-1) if torch.rand(1, generator=g, device=x.device).item() < P else x.clone()


def make_inputs():
    return [torch.randn(8, 3, 16, 32), int(torch.randint(0, 2**31 - 1, (1,), device="cpu").item())]
