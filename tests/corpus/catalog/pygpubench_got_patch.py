# expect: KL406
# class: pygpubench: GOT patch (cudaEventElapsedTime's GOT slots repointed to a ctypes stub that reports 0.42 us; the kernel is honest)
# device: cuda
# source: gpu-mode/pygpubench exploits/submission_got_patch.py (https://github.com/gpu-mode/pygpubench/blob/main/exploits/submission_got_patch.py)
# kernel-lsp: entry=relu reference=ref inputs=make_inputs
# The events lie, the host clock around the call does not: the gap is what a checker can see (KL406 today; a
# checker that trusted the events would see KL403 at this size).
import ctypes
import struct

import torch
import triton
import triton.language as tl

N = 1 << 24  # large enough that the forged time is physically impossible and the host clock's gap is visible


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


_ELAPSED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p)


@_ELAPSED
def _fake_elapsed(ms, start, end):
    ms[0] = 0.00042  # 0.42 us, every time
    return 0  # cudaSuccess


def _got_slots(path, base):
    """Addresses of the GOT slots of cudaEventElapsedTime* in the ELF at `path` loaded at `base`."""
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF":
            return []
        shoff, = struct.unpack_from("<Q", ehdr, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", ehdr, 0x3A)
        f.seek(shoff)
        sections = [struct.unpack("<IIQQQQIIQQ", f.read(shentsize)[:64]) for _ in range(shnum)]

        def read(sec):
            f.seek(sec[4])
            return f.read(sec[5])
        slots = []
        for sec in sections:
            if sec[1] != 4:  # SHT_RELA
                continue
            symtab = sections[sec[6]]
            strtab = read(sections[symtab[6]])
            syms = read(symtab)
            relas = read(sec)
            for i in range(0, len(relas), 24):
                r_offset, r_info, _ = struct.unpack_from("<QQq", relas, i)
                sym = r_info >> 32
                if sym == 0 or (r_info & 0xFFFFFFFF) not in (6, 7):  # GLOB_DAT, JUMP_SLOT
                    continue
                name_off, = struct.unpack_from("<I", syms, sym * 24)
                name = strtab[name_off:strtab.index(b"\0", name_off)]
                if name.startswith(b"cudaEventElapsedTime"):
                    slots.append(base + r_offset)
        return slots


def _patch():
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    bases = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and parts[2] == "00000000" and ".so" in parts[5]:
                bases.setdefault(parts[5], int(parts[0].split("-")[0], 16))
    stub = ctypes.cast(_fake_elapsed, ctypes.c_void_p).value
    for path, base in bases.items():
        if not any(k in path for k in ("torch", "c10", "cudart")):
            continue
        try:
            for slot in _got_slots(path, base):
                libc.mprotect(slot & ~0xFFF, 0x1000, 3)  # RELRO pages: make them writable again
                ctypes.c_uint64.from_address(slot).value = stub
        except OSError:
            pass


if torch.cuda.is_available():
    torch.cuda.init()
    _patch()


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def ref(x):
    return torch.relu(x)


def make_inputs():
    return [torch.randn(N)]
