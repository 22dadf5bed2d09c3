"""The evidence runs' input sets, planned here: A, B, D (fresh values of the same shapes), C (A with only its later
half changed), S (A with a few elements of B at positions drawn from the system's randomness) and a larger set
when the launcher's sizes suggest a cap, each with its float64 truth and PyTorch's own result (isolated.py runs
them; judge.py judges what comes back)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from ....jobs import CheckJob
from ...problem.loader import _is_triton_decorator
from ..plan.variants import shrink_knobs
from ..signs import aligned, sign_free_calls

CPU_BUDGET = 1 << 13  # input and output elements of A, B and C under the CPU interpreter
GPU_BUDGET = 1 << 20  # on a GPU
LARGE_MAX = 1 << 18  # the larger set, under the interpreter: elements at most
LARGE_MAX_PROGRAMS = 2048  # and programs of the kernel's smallest block at most (the interpreter's cost)


def _launcher_literals(source: str) -> list[int]:
    """The integers the launchers compute with: the file's functions and classes that are not Triton kernels (a
    module's own size constants, such as `N = 4000`, are the problem's, not a cap), their literals and their constant
    arithmetic (`2 ** 6`, `64 * 4`, `1 << 8`, as the interpreter would fold it), however it is spelled."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                not any(_is_triton_decorator(d) for d in node.decorator_list):
            for n in ast.walk(node):
                value = _folded(n)
                if type(value) is int and 2 <= value <= 1 << 20:
                    found.add(value)
    return sorted(found)


_FOLDS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.FloorDiv: lambda a, b: a // b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
          ast.Pow: lambda a, b: a ** b}


def _folded(node: ast.AST):
    """An int constant expression's value (literals and + - * // << >> ** of them, kept small), else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLDS:
        a, b = _folded(node.left), _folded(node.right)
        if a is None or b is None or abs(a) > 1 << 40 or abs(b) > 64 or (isinstance(node.op, ast.FloorDiv) and b == 0):
            return None
        if isinstance(node.op, (ast.LShift, ast.RShift, ast.Pow)) and b < 0:
            return None
        return _FOLDS[type(node.op)](a, b)
    return None


def _taking(a: list, fresh: list, eligible, positions) -> list:
    """A copy of `a` whose `eligible` tensors (of the same shape in `fresh`) take the flat positions
    `positions(numel)` from `fresh`; other values stay as they are."""
    import torch
    out = []
    for x, y in zip(a, fresh):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape and eligible(x):
            c = x.contiguous().clone()
            flat, other = c.reshape(-1), y.contiguous().reshape(-1)
            at = positions(flat.numel())
            flat[at] = other[at]
            out.append(c)
        else:
            out.append(x)
    return out


def _tail_changed(a: list, fresh: list) -> list:
    """A copy of `a` whose tensors keep their first half and take their second half from `fresh`."""
    return _taking(a, fresh, lambda x: x.numel() > 1, lambda n: slice(n // 2, None))


# The calls on one set of buffers after the "plain" call on A, each refilled in place first: (run, input set). No
# two in a row share values, so a result replayed once an address has repeated (a warmed-up timing loop: pygpubench
# replays from the third call, a patient cheat later) is wrong on one of them; the last refill is A again, then
# "sparse" changes a few elements of it (never the first or last), which a cache keyed on the address and a sample
# of the values (the first and last elements, say) takes for the same call.
REFILLS = [("refilled", "B"), ("refilled-2", "D"), ("refilled-3", "B")] + [
    (f"refilled-{i}", "ADB"[(i - 4) % 3]) for i in range(4, 14)] + [("sparse", "S")]
SPARSE_CHANGES = 8  # elements changed per floating-point input in "sparse"
REFILL_BUDGET_S = 10.0  # past the first three refills, the chain stops once it has taken this long (then "sparse")


def _sparse_changed(a: list, fresh: list) -> list:
    """A copy of `a` whose floating-point tensors (of 16 elements or more) take SPARSE_CHANGES elements from `fresh`
    (a draw of the problem's own distribution, so still inputs the reference accepts), at positions drawn from the
    system's randomness, never the first or the last: nothing in the checked code can predict them."""
    import random
    rng = random.SystemRandom()
    return _taking(a, fresh, lambda x: x.is_floating_point() and x.numel() >= 16,
                   lambda n: rng.sample(range(1, n - 1), SPARSE_CHANGES))


def _elements(inputs: list) -> int:
    import torch
    return sum(x.numel() for x in inputs if isinstance(x, torch.Tensor))


def _cpu(inputs: list) -> list:
    import torch
    return [x.detach().to("cpu") if isinstance(x, torch.Tensor) else x for x in inputs]


def _truth(reference, inputs: list, seed: int) -> tuple[list, list, bool]:
    """(float64 truth, PyTorch's result in the task's dtype, whether the reference drew random numbers) of the
    reference on clones of the inputs, with the seed the harness calls the implementation with, kept on the inputs'
    device (a GPU's sets are drawn, computed and judged there). A reference that draws random numbers draws other
    ones in float64: its own result is then the truth (the harness's seed gives the implementation the same draws,
    on the CPU)."""
    import torch
    from ...problem.problem import float64_reference, manual_seed
    from ..compare import flatten_outputs
    from ..plan.variants import clone_inputs, upcast
    cuda = any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs)

    def states() -> list:  # the generators a reference may draw from: the CPU's, and the GPU's where the sets are
        return [torch.random.get_rng_state()] + ([torch.cuda.get_rng_state()] if cuda else [])
    with torch.no_grad():
        manual_seed(seed)
        before = states()
        r = flatten_outputs(reference(*clone_inputs(inputs)))
        draws = not all(torch.equal(a, b) for a, b in zip(before, states()))
        t = r
        if not draws:
            ref64 = float64_reference(reference)
            manual_seed(seed)
            try:
                t = flatten_outputs(ref64(*upcast(clone_inputs(inputs))))
            except Exception:
                t = r  # a reference that cannot run in float64: its own result, as the verifier does
    keep = lambda xs: [x.detach() for x in xs if isinstance(x, torch.Tensor)]  # noqa: E731
    return keep(t), keep(r), draws


def prepare(job: CheckJob, problem, device: str, cpu_sizes: dict[str, int], cpu_setting: dict | None = None,
            sign_free: list[str] | None = None) -> dict:
    """The sets, their truth and the implementation's build: sizes shrunk to the device's budget (and on the CPU no
    larger than the verifier's own), inputs A, B, C, D, S and maybe a larger set, each with its float64 truth and
    PyTorch's own result. A problem without size knobs runs at its own sizes on a GPU and, on the CPU, at the sizes
    the verifier read from its inputs and shrank (`cpu_setting`, shapes.py), where the reference accepts them.
    `sign_free`: the sign-free decompositions the verifier found the reference calls (signs.py); None: asked here."""
    on_gpu = device == "cuda"
    budget = GPU_BUDGET if on_gpu else CPU_BUDGET
    knobs = dict(problem.size_knobs)
    small = shrink_knobs(knobs, problem.elements, budget) if knobs and problem.elements(knobs) > budget else {}
    small = {**knobs, **small}
    if not on_gpu:  # no larger than the verifier's CPU sizes, which it shrank to the interpreter's cost
        small = {k: min(n, cpu_sizes.get(k, n)) for k, n in small.items()}
    setting = dict(cpu_setting or {}) if not knobs and not on_gpu else {}
    seed = job.seed
    where = (lambda xs: xs) if on_gpu else _cpu  # a GPU's sets stay there: drawn, sent and judged on the device
    draw = lambda s, k: where(problem.make_inputs(s, k, setting))  # noqa: E731
    if not knobs and not on_gpu and _elements(draw(seed + 101, {})) > 8 * budget:
        raise TooLarge(f"the problem's own inputs ({problem.elements({})} elements) have no size knob to shrink "
                       "them for the CPU interpreter, and the sizes read from them could not be shrunk enough; a check "
                       "with --device cuda runs them")
    with problem.knobs_set(small):
        a = draw(seed + 101, small)
        b = draw(seed + 102, small)
        c = _tail_changed(a, draw(seed + 103, small))
        d = draw(seed + 105, small)
        init = problem.init(small, setting)
        reference = problem.fresh_reference(init)
    sets: dict[str, list] = {"A": a, "B": b, "C": c, "D": d, "S": _sparse_changed(a, b)}
    large_knobs = _large_knobs(job, problem, knobs, small, on_gpu)
    truth: dict[str, Any] = {}
    if large_knobs is not None:
        with problem.knobs_set(large_knobs):
            sets["large"] = draw(seed + 104, large_knobs)
            large_init = problem.init(large_knobs)
            if large_init != init and job.link.kind == "kernelbench":
                sets.pop("large")  # the model's own shape changes with this size: one model serves every call
            else:
                truth["large"] = _truth(problem.fresh_reference(large_init), sets["large"], seed)
    with problem.knobs_set(small):
        for name in ("A", "B", "C", "D", "S"):
            try:
                truth[name] = _truth(reference, sets[name], seed)
            except Exception:
                if name != "S":
                    raise
                sets.pop("S")  # a reference that rejects the mixed values: the other refills still run
    # A reference that seeds itself and draws (torch.manual_seed(0); x + torch.randn_like(x)) is repeatable on one
    # device, but the truth is drawn here, on the CPU: a player on a GPU draws from CUDA's generator, other
    # numbers. There only the launches are judged, as for a random reference.
    drew = any(v[2] for v in truth.values())
    # Outputs defined up to sign (signs.py): PyTorch's own result is brought to the truth's signs here, once.
    found = sign_free if sign_free is not None else sign_free_calls(reference, sets["A"])
    signs = found if not problem.random and found else False  # its pairs turn repeated values' vectors (rotations.py)
    if signs:
        truth = {name: (t, aligned(r, t, found=signs), *rest) for name, (t, r, *rest) in truth.items()}
    return {"sets": {**sets}, "truth": {name: v[:2] for name, v in truth.items()},
            "random": bool(problem.random) or (on_gpu and drew), "knobs": small, "init": list(init or []),
            "elements": problem.elements(small), "signs": signs}


def _large_knobs(job: CheckJob, problem, knobs: dict[str, int], small: dict[str, int],
                 on_gpu: bool) -> dict[str, int] | None:
    """Sizes past any size the launcher could single out: on a GPU, the problem's own (when the small set shrank
    them); under the interpreter, twice the product of the two largest int literals of the implementation (a grid
    capped at 64 programs of 256 is wrong past 16384 elements), when that stays affordable."""
    if not knobs:
        return None
    if on_gpu:
        return knobs if small != knobs and problem.elements(knobs) <= 16 * GPU_BUDGET else None
    source = job.source_override if job.source_override is not None else Path(job.path).read_text("utf-8")
    literals = _launcher_literals(source)
    if len(literals) < 2:
        return None
    target = 2 * literals[-1] * literals[-2]
    smallest_block = min((v for v in literals if v >= 16 and v & (v - 1) == 0), default=16)
    if problem.elements(small) >= target or target > LARGE_MAX or target // smallest_block > LARGE_MAX_PROGRAMS:
        return None
    grown = dict(small)
    for _ in range(32):
        if problem.elements(grown) >= target:
            break
        name = min(grown, key=lambda k: grown[k])
        grown[name] = grown[name] * 2 + 1
    if problem.elements(grown) > 2 * LARGE_MAX or problem.elements(grown) < target:
        return None
    return grown


class TooLarge(Exception):
    """The re-run cannot be sized for this device."""
