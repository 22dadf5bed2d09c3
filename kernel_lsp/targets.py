"""GPU targets by name, with the per-block limits a launch on that GPU would enforce.

Limits come from NVIDIA's CUDA C Programming Guide (compute capability table) and AMD's CDNA3 ISA guide.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str  # the user's spelling: sm_90, gfx942
    backend: str  # "cuda" or "hip"
    arch: int | str  # 90 or "gfx942"
    warp_size: int
    max_shared_per_block: int  # bytes, opt-in maximum
    registers_per_block: int  # 32-bit registers


_CUDA = {
    # cc: (max opt-in shared memory per block in bytes, registers per block)
    70: (96 * 1024, 65536),
    75: (64 * 1024, 65536),
    80: (163 * 1024, 65536),
    86: (99 * 1024, 65536),
    87: (163 * 1024, 65536),
    89: (99 * 1024, 65536),
    90: (227 * 1024, 65536),
    100: (227 * 1024, 65536),
    103: (227 * 1024, 65536),
    120: (99 * 1024, 65536),
}

_HIP = {"gfx90a": 64 * 1024, "gfx942": 64 * 1024, "gfx950": 160 * 1024}


def parse_target(name: str) -> Target:
    n = name.strip().lower()
    if n.startswith("sm_") or n.startswith("sm"):
        digits = n[3:] if n.startswith("sm_") else n[2:]
        digits = digits.rstrip("a")
        if not digits.isdigit() or int(digits) not in _CUDA:
            known = ", ".join(f"sm_{k}" for k in _CUDA)
            raise ValueError(f"unknown target {name!r} (known: {known}, {', '.join(_HIP)})")
        cc = int(digits)
        shared, regs = _CUDA[cc]
        return Target(f"sm_{cc}", "cuda", cc, 32, shared, regs)
    if n in _HIP:
        return Target(n, "hip", n, 64, _HIP[n], 512 * 64)
    known = ", ".join(f"sm_{k}" for k in _CUDA)
    raise ValueError(f"unknown target {name!r} (known: {known}, {', '.join(_HIP)})")


def parse_targets(names: list[str] | str) -> list[Target]:
    if isinstance(names, str):
        names = [t for t in names.split(",") if t.strip()]
    if not isinstance(names, list) or not names:
        raise ValueError("expected a non-empty list of targets such as [\"sm_80\", \"sm_90\"]")
    return [parse_target(str(n)) for n in names]
