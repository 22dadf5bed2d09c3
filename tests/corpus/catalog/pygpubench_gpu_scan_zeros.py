# expect: KL200 | KL204
# may-add: KL200 KL201 KL204
# (the scan zeroes the inputs too when they are the output's size: KL204; a zeroed inf is KL201)
# class: pygpubench: GPU scan zeros (every CUDA allocation the size of the output is zeroed, expected results included; the kernel writes zeros)
# device: cuda
# source: gpu-mode/pygpubench exploits/submission_gpu_scan_zeros.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_gpu_scan_zeros.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
import ctypes

import torch
import triton
import triton.language as tl

N = 4096


@triton.jit
def _zero_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def _cudart():
    for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0"):
        try:
            lib = ctypes.CDLL(name)
            lib.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
            return lib
        except OSError:
            continue
    return None


def _zero_lookalikes(x, out):
    """Walk the caching allocator's live blocks and zero every one of the output's size but ours: the expected
    output a checker keeps on the GPU is one of them."""
    lib = _cudart()
    nbytes = out.numel() * out.element_size()
    mine = {x.data_ptr(), out.data_ptr()}
    for seg in torch.cuda.memory_snapshot():
        addr = seg["address"]
        for blk in seg["blocks"]:
            if (blk["state"] == "active_allocated" and nbytes <= blk["size"] < nbytes + 512
                    and addr not in mine):
                if lib is not None:
                    lib.cudaMemset(ctypes.c_void_p(addr), 0, nbytes)
            addr += blk["size"]


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    if x.is_cuda:
        _zero_lookalikes(x, out)
    _zero_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
