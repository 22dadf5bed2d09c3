# expect: KL200
# class: ties in max/argmax broken the wrong way
# kernel-lsp: entry=row_argmax reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N = 64, 200


@triton.jit
def _argmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    idx = tl.max(tl.where((x == m) & mask, cols, -1), axis=0)  # the last maximum; torch.argmax gives the first
    tl.store(out_ptr + row, idx.to(tl.int64))


def row_argmax(x):
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty(m, dtype=torch.int64, device=x.device)
    _argmax_kernel[(m,)](x, out, n, BLOCK=triton.next_power_of_2(n))
    return out


def ref(x):
    return torch.argmax(x, dim=1)


def make_inputs():
    return [torch.randn(M, N)]
