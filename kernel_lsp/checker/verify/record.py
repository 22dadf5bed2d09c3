"""What the verifier's rules (rules.py) take and give, and the words their messages use: the evidence record of one
variant's run (`Evidence`), with the sentinel that poisons its second run and the mask of the elements that neither
run wrote; a rule's finding (`RuleFinding`) and a variant's judgement (`Judgement`); how a message names the variant
(`describe_variant`, `located`) and an output (`output_name`). No rule is decided here, and nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Comparison

SENTINEL = -1.2345e4  # the default second poison: finite in fp16/bf16/fp32 (each check draws its own: draw_sentinel)


@dataclass(kw_only=True)
class Evidence:
    """What running one variant collected. Output lists are flattened (nested tuples of tensors become a list)."""

    variant: str  # the variant's name (seed-1, special, odd-size, strided, ...)
    kind: str  # values, size or layout
    description: str
    shapes: str  # the inputs' shapes (and strides) as the message shows them
    outputs: list  # the implementation's first run, its allocations poisoned with NaN
    rerun: list  # a second run on the same inputs, allocations poisoned with SENTINEL (None entries: it raised)
    reference: list  # PyTorch in the task's dtype
    truth: list  # the reference in float64 (the same as `reference` when it cannot run in float64)
    abs_terms: list  # the float64 reference on absolute inputs (None entries where it could not run)
    truth_dtype: str = "float64"
    launches: int = 0  # Triton launches the implementation made during the first run
    inputs_after: list = field(default_factory=list)  # the implementation's inputs after its first run
    reference_inputs_after: list = field(default_factory=list)  # the reference's inputs after its call
    earlier: list = field(default_factory=list)  # flattened outputs of earlier calls on other inputs
    # fingerprint() of every informative output of every earlier variant (its first run and its second), with the
    # variant's name: a cache can hold a result much longer than `earlier` keeps tensors
    earlier_prints: dict = field(default_factory=dict)
    # sketch() of the same outputs (the values at a few secret positions), for a remembered output altered a little
    earlier_sketches: list = field(default_factory=list)
    untrusted: bool = False  # the CPU interpreter computes these kernels' numbers wrongly: values not judged
    sample_message: str | None = None  # random ops: the reference's per-sample invariant, broken
    result_line: int | None = None  # no launch: the line of the user's file that returned the result
    updated: list[int] = field(default_factory=list)  # inputs the reference updates in place (judged as outputs,
    # appended after the returned outputs in `outputs`, `rerun`, `reference`, `truth` and `abs_terms`)
    spread: list | None = None  # no float64 truth: per output, how far the reference moves under 1-ulp inputs
    terms: list | None = None  # per output, input elements per output element (a reduction's length)
    constants: list | None = None  # per output, how far the truth moves, per element, with its float constants in fp32
    inputs_before: list = field(default_factory=list)  # the inputs as drawn (before any call)
    fresh_draws: bool = False  # random ops: the reference draws new numbers on every call (no seed among its inputs)
    reseeded: list | None = None  # random ops: the outputs with the reference's seed arguments changed (truth.seed_args)
    rerun_launches: int | None = None  # Triton launches during the second run (None: no second call was made)
    sentinel: float = SENTINEL  # the second run's poison value
    correlated: bool = False  # rows of equal or repeated values (the structured variant): rounding errors add up
    reference_draws: list | None = None  # random ops: the reference's flat outputs from more draws (truth.py)
    more_draws: Any = None  # random ops: a callable giving CONFIRM_DRAWS more, asked once before a finding rests on them
    confirmed: bool = False  # random ops: judged on more_draws' draws too (rules.judge_random sets it)

    def budget_args(self, j: int) -> dict:
        """compare_tensor's extra arguments for output j."""
        return {"spread": self.spread[j] if self.spread and j < len(self.spread) else None,
                "terms": self.terms[j] if self.terms and j < len(self.terms) else 1.0,
                "constants": self.constants[j] if self.constants and j < len(self.constants) else None,
                "correlated": self.correlated}

    def name(self, j: int) -> str:
        """How a message names output j: a returned output, or an input the reference updates in place."""
        returned = len(self.outputs) - len(self.updated)
        if j >= returned:
            return f"input {self.updated[j - returned]} (which the reference updates in place)"
        return output_name(j, returned)


@dataclass
class RuleFinding:
    code: str
    message: str
    # "launch" (the launch site), "store" (the store that wrote `comparison`'s element), "result" (the line that
    # returned the result) or "none"
    place: str = "launch"
    severity: str | None = None  # "warning" where the code's own severity would overstate it
    output: int | None = None  # which output, for place "store"
    rerun: bool = False  # the element is in the second run's output
    comparison: Comparison | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Judgement:
    findings: list[RuleFinding]
    verdict: str  # for the variant table: ok, structure, stale, or the worst output's code
    worst: Comparison | None = None


def describe_variant(kind: str, name: str, description: str, shapes: str | None) -> str:
    """Where a failure happened, after the problem itself: the sizes, the layout, or the values of the inputs."""
    if name.startswith("same-module"):
        return (f"when {description} is called at shape {shapes}: what it keeps from its first call (a grid, a "
                "buffer, a descriptor) does not follow the size")
    if kind == "size":
        return f"at shape {shapes}, which the reference accepts" if shapes else f"at {description}"
    if kind == "layout":
        return f"with non-contiguous inputs ({description}; {shapes}), which the reference accepts"
    return f"variant {name}: {description}, inputs {shapes}"


def located(e: Evidence, problem: str) -> str:
    """A message leads with what is wrong and where in the output; the variant follows (a reader, or the
    Problems panel, sees the first 80 characters)."""
    return f"{problem}; {describe_variant(e.kind, e.variant, e.description, e.shapes)}"


def output_name(j: int, count: int) -> str:
    return "output" if count == 1 else f"output {j}"


def draw_sentinel() -> float:
    """A second poison value for one check: finite and exact in fp16, bf16 and fp32 (an odd integer of 129 to 253),
    negative or positive, from the system's randomness, so that no checked code can know it. One binade for every
    draw: a kernel that adds a small value to the poison leaves the sentinel unchanged exactly where that value is
    below half its ulp, so the count of such elements must not depend on the draw (with magnitudes from 516 to
    16192 a garbage-reading kernel's count moved between checks: wafer_garbage_output, 2013 to 2016 of 3999)."""
    import random
    rng = random.SystemRandom()
    return float(rng.choice((-1, 1)) * rng.randrange(129, 255, 2))


def unwritten_mask(y, y_b, sentinel: float = SENTINEL):
    """Elements NaN in the first run and the sentinel in the second: both came from the poisoned allocation."""
    import torch
    if isinstance(y, torch.Tensor) and isinstance(y_b, torch.Tensor) and y.shape == y_b.shape and y.dtype == y_b.dtype:
        if y.is_floating_point():
            return torch.isnan(y) & (y_b == torch.tensor(sentinel, dtype=y.dtype))
    return None
