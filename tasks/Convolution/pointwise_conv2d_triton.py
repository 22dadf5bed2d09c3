# kernel-lsp: reference=pointwise_conv2d.py
"""A 1x1 convolution as a persistent TMA GEMM per image, its TMA descriptors made inside the kernel
(`tl.make_tensor_descriptor`, their scratch from `triton.set_allocator`): descriptors built on the host cost the
wrapper 93 us per call on the H200, more than the kernel (benchmarks/cand11). A pointer kernel takes the shapes
TMA cannot (sizes off the tiles, strides, alignment)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BO, BP, BC, WARPS, STAGES = 128, 128, 64, 8, 3  # tile: output channels x pixels x input channels
TM, TN, TK, TWARPS, TSTAGES = 128, 256, 64, 8, 3  # the TMA kernel's tiles

_SMS = {}  # device index -> multiprocessor count


def _sm_count(device) -> int:
    index = device.index if device.index is not None else torch.cuda.current_device()
    sms = _SMS.get(index)
    if sms is None:
        sms = _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return sms


_ALLOCATORS = {}  # device -> allocator of global scratch on it


def _allocator(device):
    """The allocator of global scratch on `device` for the kernel's device-side TMA descriptors (128 bytes each,
    per program)."""
    alloc = _ALLOCATORS.get(device)
    if alloc is None:
        alloc = _ALLOCATORS[device] = lambda size, alignment, stream: torch.empty(size, device=device,
                                                                                 dtype=torch.int8)
    return alloc


@triton.jit
def _pointwise_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, C_out, HW, W, sxn, sxc, sxh, sxw,
                      BO: tl.constexpr, BP: tl.constexpr, BC: tl.constexpr, FLAT: tl.constexpr):
    """out[n, o, p] = bias[o] + sum_c w[o, c] x[n, c, p] over pixels p: a (C_out x C_in) @ (C_in x HW) GEMM.
    FLAT: each channel's pixels are one contiguous run (stride 1, rows unpadded), so loads need no division."""
    n = tl.program_id(2).to(tl.int64)
    ro = tl.program_id(0) * BO + tl.arange(0, BO)
    rp = tl.program_id(1) * BP + tl.arange(0, BP)
    rc = tl.arange(0, BC)
    if FLAT:
        pix = rp
    else:
        pix = (rp // W) * sxh + (rp % W) * sxw
    acc = tl.zeros((BO, BP), dtype=tl.float32)
    for c in range(0, C_in, BC):
        w = tl.load(w_ptr + ro[:, None] * C_in + (c + rc)[None, :],
                    mask=(ro[:, None] < C_out) & ((c + rc)[None, :] < C_in), other=0.0)
        x = tl.load(x_ptr + n * sxn + (c + rc)[:, None] * sxc + pix[None, :],
                    mask=((c + rc)[:, None] < C_in) & (rp[None, :] < HW), other=0.0)
        acc = tl.dot(w, x, acc)
    acc += tl.load(b_ptr + ro, mask=ro < C_out, other=0.0).to(tl.float32)[:, None]
    tl.store(out_ptr + n * C_out * HW + ro[:, None] * HW + rp[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(ro[:, None] < C_out) & (rp[None, :] < HW))


@triton.jit
def _pointwise_tma_kernel(w_ptr, x_ptr, o_ptr, b_ptr, N, C_out, HW, C_in, n_tiles,
                          TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr, NUM_SMS: tl.constexpr):
    """out[n] = W @ x[n] + bias with every image's channels flattened into rows (x as (N*C_in, HW), out as
    (N*C_out, HW)); one program per SM walks the (image, channel tile, pixel tile) tiles, the tile and K loops
    flattened into one software pipeline. The descriptors are made here, once per program."""
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[C_out, C_in], strides=[C_in, 1], block_shape=[TM, TK])
    dt = x_ptr.dtype.element_ty
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N * C_in, HW], strides=[HW, 1], block_shape=[TK, TN])
    o_desc = tl.make_tensor_descriptor(o_ptr, shape=[N * C_out, HW], strides=[HW, 1], block_shape=[TM, TN])
    num_m = C_out // TM
    num_n = tl.cdiv(HW, TN)
    per_image = num_m * num_n
    for tile in tl.range(tl.program_id(0), n_tiles, NUM_SMS, flatten=True):
        img = tile // per_image
        t = tile % per_image
        pid_n = t // num_m
        pid_m = t % num_m
        acc = tl.zeros((TM, TN), dtype=tl.float32)
        for k in range(0, C_in // TK):
            w = w_desc.load([pid_m * TM, k * TK]).to(dt)  # the weight in its own dtype, rounded as .to(x.dtype)
            x = x_desc.load([img * C_in + k * TK, pid_n * TN])
            acc = tl.dot(w, x, acc)
        bias = tl.load(b_ptr + pid_m * TM + tl.arange(0, TM)).to(dt).to(tl.float32)
        o_desc.store([img * C_out + pid_m * TM, pid_n * TN], (acc + bias[:, None]).to(o_desc.dtype))


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def _params(self, dtype):
        """The weight as a contiguous (C_out, C_in) matrix and the bias, both in `dtype`, converted on every call
        as the reference does (no cache across calls)."""
        weight, bias = self.conv.weight, self.conv.bias
        w = weight.to(dtype).reshape(weight.shape[0], -1)
        return (w if w.is_contiguous() else w.contiguous()), bias.to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c_in, h, w = x.shape
        hw = h * w
        weight, bias = self.conv.weight, self.conv.bias
        c_out = weight.shape[0]
        out = torch.empty((n, c_out, h, w), dtype=x.dtype, device=x.device)
        wsize = weight.element_size()
        if (x.dtype in (torch.float16, torch.bfloat16) and n > 0 and hw > 0 and c_out % TM == 0
                and c_in % TK == 0 and (hw * x.element_size()) % 16 == 0 and (c_in * wsize) % 16 == 0
                and x.is_contiguous() and weight.is_contiguous() and bias.is_contiguous()
                and x.data_ptr() % 16 == 0 and weight.data_ptr() % 16 == 0):
            # The weight and bias are converted inside the kernel (as `.to(x.dtype)` rounds them): no cast kernels
            # and no allocations per call on the host, whose issue time bounded a loop of calls (73 us against
            # 58.5 us of kernel on the H200).
            if x.is_cuda:
                sms = _sm_count(x.device)
                triton.set_allocator(_allocator(x.device))  # a ContextVar: set in the calling thread, ~0.1 us
            else:
                sms = 4
            n_tiles = n * (c_out // TM) * triton.cdiv(hw, TN)
            _pointwise_tma_kernel[(min(sms, n_tiles),)](
                weight, x, out, bias, n, c_out, hw, c_in, n_tiles,
                TM=TM, TN=TN, TK=TK, NUM_SMS=sms, num_warps=TWARPS, num_stages=TSTAGES)
            return out
        if out.numel() == 0:
            return out
        weight, bias = self._params(x.dtype)
        flat = x.stride(3) == 1 and x.stride(2) == w
        grid = (triton.cdiv(c_out, BO), triton.cdiv(hw, BP), n)
        _pointwise_kernel[grid](x, weight, bias, out, c_in, c_out, hw, w, x.stride(0), x.stride(1), x.stride(2),
                                x.stride(3), BO=BO, BP=BP, BC=BC, FLAT=flat, num_warps=WARPS, num_stages=STAGES)
        return out
