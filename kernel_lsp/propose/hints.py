"""Techniques worth trying, for the optimize prompt: what made verified Triton kernels faster than torch.compile on
the H200 (docs/benchmarks.md, sessions 8 and 9), each offered only where the file's text shows the pattern it
improves. None of them is a launch parameter tune could move (propose/tune.py searches those): each is a change to
the kernel's code, the kind a person or a model makes. The checker still verifies every candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Hint:
    name: str
    applies: Callable[[str], bool]
    text: str


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


_ONE_PER_ELEMENT_RNG = r"\btl\.rand(n|int)?\("
_ROW_LOOP = r"for\s+\w+\s+in\s+(tl\.)?range\(\s*0\s*,"

HINTS = [
    Hint("four random numbers per Philox call",
         lambda t: re.search(_ONE_PER_ELEMENT_RNG, t) is not None,
         "Each `tl.rand` / `tl.randn` / `tl.randint` call runs the Philox generator for one number per element; "
         "`tl.rand4x` / `tl.randn4x` / `tl.randint4x` return four numbers from one call. Draw them for a quarter of "
         "the offsets and use the four for four neighbouring elements (e.g. `tl.reshape(tl.join(tl.join(r0, r1), "
         "tl.join(r2, r3)), (BLOCK,))`). Random ops became 2-3x faster than torch.compile this way."),
    Hint("a row read once, from registers",
         lambda t: _count(_ROW_LOOP, t) >= 2 and re.search(r"\btl\.(sum|max|min)\(", t) is not None,
         "The kernel walks the same row in more than one loop (a statistic, then the output), so it reads the row "
         "from memory more than once. When a row fits in registers (up to several thousand elements), load it whole "
         "once (`BLOCK = triton.next_power_of_2(n_cols)`), compute every statistic from the registers, and pick "
         "`num_warps` from the row's width (about 512-2048 columns per warp). Softmax, layer norm and cross entropy "
         "went from 1.0-1.6x to 1.2-2.1x torch.compile this way."),
    Hint("cache hints on streaming loads",
         lambda t: "tl.load(" in t and "eviction_policy" not in t and re.search(_ROW_LOOP, t) is not None,
         "Loads of data each program reads once can say so: `eviction_policy=\"evict_first\"`; small vectors every "
         "program reads again (a weight row, per-channel statistics) `eviction_policy=\"evict_last\"`. torch.compile's "
         "generated kernels do this; it moved row reductions by 1-10%."),
    Hint("one software pipeline over a persistent loop",
         lambda t: "tl.dot(" in t and "tl.range(" in t and "flatten" not in t,
         "A persistent matmul (a `tl.range` loop over output tiles around the K loop) can run both loops as one "
         "software pipeline with `tl.range(..., flatten=True)`, so the next tile's loads overlap this tile's store."),
    Hint("fp32 accuracy from TF32 tensor cores",
         lambda t: "tl.dot(" in t and re.search(r"input_precision\s*=\s*[\"']ieee[\"']|allow_tf32\s*=\s*False", t)
         is not None,
         "`tl.dot(..., input_precision=\"tf32x3\")` computes each fp32 product from three TF32 products: about fp32's "
         "error on tensor cores, where \"ieee\" runs on the FMA units. Hopper's TF32 MMA wants both operands "
         "contiguous along the reduction (K): load or lay out the data so (a channels-last copy of a convolution's "
         "input was cheap beside the gain). Faster still: split each fp32 operand once, outside the K loop, into two "
         "TF32 values hi + lo (round the bits: `(x.to(tl.int32, bitcast=True) + 0x1000) & -8192`), and add "
         "`tl.dot(a_hi, b_lo) + tl.dot(a_lo, b_hi) + tl.dot(a_hi, b_hi)` at input_precision=\"tf32\" "
         "(tasks/Convolution/conv1d: 1.23x over tf32x3). Mind infinities: x - hi is NaN where x is infinite. "
         "Verify it, and sweep the tiles."),
    Hint("casts inside the kernel",
         lambda t: re.search(r"self\.[\w.]+\.to\(\s*\w+\.dtype\s*\)", t) is not None,
         "Casting a parameter in the wrapper on every call (`self.weight.to(x.dtype)`) is an extra launch each; the "
         "kernel can load the parameter as it is and round it with `.to(out_ptr.dtype.element_ty)`, which gives the "
         "same values as the wrapper's cast."),
]


def optimization_hints(text: str) -> list[Hint]:
    """The hints whose pattern appears in the file's text, in HINTS order."""
    return [h for h in HINTS if h.applies(text)]
