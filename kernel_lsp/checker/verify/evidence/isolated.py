"""The isolated re-run: evidence about the implementation gathered where it cannot see kernel-lsp, judged where it
never ran (docs/verification.md, "The isolated re-run").

The verifier runs the implementation in its own process, beside the reference, the truth and the judge. Code that
knows it is checked can behave there and cheat elsewhere, and code that reaches into the process can bend what it
is judged by. So, once a file passes the verifier, three more steps run, each in a fresh process
(run/rerun.py drives them):

1. `prepare` (a checker process that never imports the implementation): loads the reference side alone (for a
   reference in the implementation's own file, the file without the implementation: `reference_source`), picks
   sizes, draws inputs A, B and D (fresh values of the same shapes), C (A with only its later half changed) and S
   (A with a few elements from B, at positions drawn from the system's randomness), and a
   larger set when the implementation's literals suggest a size cap; computes the float64 truth and PyTorch's
   own result for each; saves inputs, truth and the harness's instructions in the run's folder;
2. the harness (player/harness.py, a neutral process: no kernel-lsp module, variable, argument or stack frame)
   imports the implementation under its own name and calls it: on A; on A's buffers refilled in place fourteen
   times (B, D, B, A, D, B, ... A, then S: REFILLS); on C; on A with every Triton launch skipped and the tensors it
   was given poisoned; on the larger set;
3. `judge` (another checker process): compares what the harness saved with the truth. Findings:
   - KL220: the implementation raises, launches nothing, or computes a wrong result where it cannot see the check;
   - KL221: output elements that no Triton launch computed (the values are the same with every launch skipped,
     and change with the inputs): the kernel's work is discarded or partly replaced by PyTorch;
   - KL206: a stale result for buffers refilled in place, for a few elements changed, or for inputs that differ
     only past their first elements (a cache keyed on an address, on part of the input, or replaying once an
     address repeats);
   - KL200: wrong at the larger size (a launcher that caps its grid, say);
   - KL222 (information): the re-run could not be made, and why.
Only gross errors count here (the verifier already judged the fine precision): an error no rounding explains.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from ....codes import severity_of
from ....jobs import CheckJob, Sink
from ....model import Finding

SOURCE = "kernel-lsp.rerun"
CPU_BUDGET = 1 << 13  # input and output elements of A, B and C under the CPU interpreter
GPU_BUDGET = 1 << 20  # on a GPU (the truth is computed on the CPU, in float64)
LARGE_MAX = 1 << 18  # the larger set, under the interpreter: elements at most
LARGE_MAX_PROGRAMS = 2048  # and programs of the kernel's smallest block at most (the interpreter's cost)


# Step 1 ---------------------------------------------------------------------------------------------------


def reference_source(source: str, implementation_names: set[str]) -> str:
    """The file's text without its implementation: no @triton.jit (or autotune, heuristics) function, none of
    `implementation_names` (ModelNew, the native entry), no `if __name__ == "__main__"` block, and at module level
    only imports, definitions and assignments to plain names. A statement that patches another module (an
    expression statement, an assignment to an attribute or an item) is dropped: it must not bend the truth."""
    tree = ast.parse(source)
    keep = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in implementation_names or any(_is_triton_decorator(d) for d in node.decorator_list):
                continue
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
            if all(isinstance(n, ast.Name) and n.id not in implementation_names for n in names):
                keep.append(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            keep.append(node)  # a docstring
    tree.body = keep
    return ast.unparse(tree)


def _is_triton_decorator(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return text.startswith(("triton.jit", "triton.autotune", "triton.heuristics", "jit", "autotune", "heuristics",
                            "tl.", "triton."))


def _load_reference_side(job: CheckJob):
    """(reference module, inputs module): never the implementation's code. A side that lives in the implementation's
    own file is imported from `reference_source` of it."""
    from ...problem.loader import import_path
    impl = os.path.realpath(job.path)
    names = {job.link.entry, "ModelNew"} if job.link.kind == "kernelbench" else {job.link.entry}
    cache: dict[str, Any] = {}

    def load(path: str, tag: str):
        real = os.path.realpath(path)
        if real not in cache:
            if real == impl:
                text = job.source_override if job.source_override is not None else Path(path).read_text("utf-8")
                cache[real] = import_path(path, tag, reference_source(text, names))
            else:
                cache[real] = import_path(path, tag)
        return cache[real]
    ref = load(job.link.reference, "ref")
    inputs = load(job.link.inputs_path or job.link.reference, "inputs")
    return ref, inputs


class _Side:
    """The reference side of a problem, built as loader.Problem builds it, without the implementation."""

    def __init__(self, job: CheckJob):
        from ...problem.loader import Problem, _random_contract, _size_knobs
        import torch
        ref, inputs_mod = _load_reference_side(job)
        self.kernelbench = job.link.kind == "kernelbench"
        self.seed = job.seed
        if self.kernelbench:
            factory, init = ref.get_inputs, ref.get_init_inputs
            knobs = _size_knobs(ref, factory, init)

            def make_reference(init_inputs):
                torch.manual_seed(self.seed)
                return ref.Model(*(init() if init_inputs is None else init_inputs)).eval()
            self.problem = Problem(lambda k, i: (None, None), factory, ref, knobs, make_reference,
                                   init_inputs=init, **_random_contract(ref))
        else:
            factory = getattr(inputs_mod, job.link.inputs_name)
            reference = getattr(ref, job.link.reference_name)
            self.problem = Problem(lambda k, i: (None, None), factory, inputs_mod, _size_knobs(inputs_mod, factory),
                                   lambda init: reference, **_random_contract(ref))

    def reference(self, knobs: dict[str, int]):
        with self.problem.knobs_set(knobs):
            init = self.problem.init(knobs)
            return self.problem.make_reference(init), init


def _launcher_literals(source: str) -> list[int]:
    """The int literals of the launchers: the file's functions and classes that are not Triton kernels (a module's
    own size constants, such as `N = 4000`, are the problem's, not a cap)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                not any(_is_triton_decorator(d) for d in node.decorator_list):
            found |= {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int
                      and 2 <= n.value <= 1 << 20}
    return sorted(found)


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


def _cpu(inputs: list) -> list:
    import torch
    return [x.detach().to("cpu") if isinstance(x, torch.Tensor) else x for x in inputs]


def _truth(reference, inputs: list, seed: int) -> tuple[list, list, bool]:
    """(float64 truth, PyTorch's result in the task's dtype, whether the reference drew random numbers) of the
    reference on clones of the inputs, with the seed the harness calls the implementation with. A reference that
    draws random numbers draws other ones in float64: its own result is then the truth (the harness's seed gives
    the implementation the same draws, on the CPU)."""
    import copy

    import torch
    from ..compare import flatten_outputs
    from ..plan.variants import clone_inputs, upcast
    with torch.no_grad():
        torch.manual_seed(seed)
        before = torch.random.get_rng_state()
        r = flatten_outputs(reference(*clone_inputs(inputs)))
        draws = not torch.equal(before, torch.random.get_rng_state())
        t = r
        if not draws:
            ref64 = copy.deepcopy(reference).double() if isinstance(reference, torch.nn.Module) else reference
            torch.manual_seed(seed)
            try:
                t = flatten_outputs(ref64(*upcast(clone_inputs(inputs))))
            except Exception:
                t = r  # a reference that cannot run in float64: its own result, as the verifier does
    keep = lambda xs: [x.detach().cpu() for x in xs if isinstance(x, torch.Tensor)]  # noqa: E731
    return keep(t), keep(r), draws


def prepare(job: CheckJob, sink: Sink) -> None:
    """Step 1: write `inputs.pt`, `truth.pt` and `spec.json` under the run's folder (job.rerun.folder)/in. What
    keeps it from doing so (a reference that needs what was filtered out of its file, sizes it cannot shrink) is
    KL222, information: the verifier's verdict stands, without the re-run's."""
    try:
        _prepare(job, sink)
    except Exception as e:
        text = str(e).splitlines()[0][:300] if str(e) else ""
        _add(sink, job, "KL222", f"the isolated re-run could not be prepared: {type(e).__name__}: {text}")


def _prepare(job: CheckJob, sink: Sink) -> None:
    import torch
    from ..plan.variants import shrink_knobs
    opts = job.rerun
    folder = Path(opts.folder) / "in"
    side = _Side(job)
    problem = side.problem
    on_gpu = opts.device == "cuda"
    budget = GPU_BUDGET if on_gpu else CPU_BUDGET
    knobs = dict(problem.size_knobs)
    small = shrink_knobs(knobs, problem.elements, budget) if knobs and problem.elements(knobs) > budget else {}
    small = {**knobs, **small}
    if not on_gpu:  # no larger than the verifier's CPU sizes, which it shrank to the interpreter's cost
        small = {k: min(n, opts.sizes.get(k, n)) for k, n in small.items()}
    if not knobs and problem.elements({}) > 8 * budget:
        raise TooLarge(f"the problem's own inputs ({problem.elements({})} elements) have no size knob to shrink "
                       "them for this device")
    seed = job.seed
    a = _cpu(problem.make_inputs(seed + 101, small))
    b = _cpu(problem.make_inputs(seed + 102, small))
    c = _tail_changed(a, _cpu(problem.make_inputs(seed + 103, small)))
    d = _cpu(problem.make_inputs(seed + 105, small))
    reference, init = side.reference(small)
    sets: dict[str, list] = {"A": a, "B": b, "C": c, "D": d, "S": _sparse_changed(a, b)}
    large_knobs = _large_knobs(job, problem, knobs, small, on_gpu)
    truth: dict[str, Any] = {}
    if large_knobs is not None:
        sets["large"] = _cpu(problem.make_inputs(seed + 104, large_knobs))
        large_ref, large_init = side.reference(large_knobs)
        if large_init != init and side.kernelbench:
            sets.pop("large")  # the model's own shape changes with this size: one model serves every call
        else:
            truth["large"] = _truth(large_ref, sets["large"], seed)
    for name in ("A", "B", "C", "D", "S"):
        try:
            truth[name] = _truth(reference, sets[name], seed)
        except Exception:
            if name != "S":
                raise
            sets.pop("S")  # a reference that rejects the mixed values: the other refills still run
    # A reference that seeds itself and draws (torch.manual_seed(0); x + torch.randn_like(x)) is repeatable on one
    # device, but the truth is drawn here, on the CPU: a harness on a GPU draws from CUDA's generator, other
    # numbers. There only the launches are judged, as for a random reference.
    drew = any(v[2] for v in truth.values())
    truth = {name: v[:2] for name, v in truth.items()}
    saved = {**sets, "init": _cpu(list(init)) if init is not None else []}
    torch.save(saved, folder / "inputs.pt")
    torch.save({"truth": truth, "random": bool(problem.random) or (on_gpu and drew), "knobs": small},
               folder / "truth.pt")
    impl = os.path.realpath(job.path)
    spec = {"path": job.path, "source": job.source_override, "module": Path(job.path).stem,
            "sys_path": [str(Path(impl).parent)], "kind": job.link.kind, "entry": job.link.entry,
            "seed": seed, "device": opts.device, "inputs": str(folder / "inputs.pt"),
            "confine": job.sandbox.enabled, "network": job.sandbox.network, "writable": list(opts.writable),
            "refills": [[name, values] for name, values in REFILLS], "refill_budget_s": REFILL_BUDGET_S}
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    sink.stat("rerun_elements", problem.elements(small))


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


# Step 3 ---------------------------------------------------------------------------------------------------


def judge(job: CheckJob, sink: Sink, harness_note: str = "") -> None:
    """Compare the harness's runs with the truth; every finding goes to the sink."""
    import torch
    folder = Path(job.rerun.folder)
    saved = torch.load(folder / "in" / "truth.pt", weights_only=True)
    truth, random = saved["truth"], saved["random"]
    try:
        runs = torch.load(folder / "out" / "result.pt", weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError) as e:
        note = job.rerun.harness_note or f"it saved no result ({type(e).__name__})"
        if job.rerun.harness_started:
            # The verifier's run completed; here the implementation ended its process, crashed or hung.
            _add(sink, job, "KL220", f"the implementation does not complete where it cannot see kernel-lsp (the "
                 f"isolated re-run): {note}")
        else:
            _add(sink, job, "KL222", f"the isolated re-run did not finish: {note}")
        return
    findings = judged(runs, truth, random or not job.rerun.values)
    for code, message, data in findings:
        _add(sink, job, code, message, **data)
    sink.stat("rerun_runs", len(runs))


def judged(runs: dict, truth: dict, random: bool) -> list[tuple[str, str, dict]]:
    """The findings of the runs, as (code, message, data); pure, so it is tested on made-up runs. With `random`
    (a random reference, or values the interpreter cannot compute faithfully) only launches are judged."""
    out: list[tuple[str, str, dict]] = []
    plain = runs.get("plain") or {}
    where = "where it cannot see kernel-lsp (the isolated re-run)"
    if plain.get("error"):
        return [("KL220", f"the implementation raises {where}: {plain['error']}", {})]
    if not plain.get("launches"):
        return [("KL220", f"the implementation launches no Triton kernel {where}", {})]
    t_a, r_a = truth["A"]
    if len(plain.get("outputs", [])) != len(t_a):
        return [("KL220", f"the implementation returns {len(plain.get('outputs', []))} tensors {where}, the "
                 f"reference {len(t_a)}", {})]
    if not random:
        bad = _gross(plain["outputs"], t_a, r_a)
        if bad:
            return [("KL220", f"the implementation computes a different result {where}: {bad}", {})]
    watched = runs.get("watched") or {}
    kinds = watched.get("kinds") or []
    if kinds and all(k in ("copy", "nothing") for k in kinds):
        what = ("copies a tensor that was already computed" if "copy" in kinds else "changes nothing")
        return [("KL221", f"every Triton launch only {what}: the result is computed before the kernel runs "
                 "(by PyTorch?), and the kernel moves or rewrites it", {"launches": kinds[:20]})]
    aliases = set(plain.get("aliases", []))
    skipped, refilled = runs.get("skipped") or {}, runs.get("refilled") or {}
    again = runs.get("skipped-2") or {}
    if not skipped.get("error") and len(skipped.get("outputs", [])) == len(plain["outputs"]):
        second = again.get("outputs") if not again.get("error") else None
        independent = _launch_independent(plain["outputs"], skipped["outputs"], refilled.get("outputs"), aliases,
                                          second)
        if independent:
            out.append(("KL221", independent[0], independent[1]))
    if not random:
        refill = "called again on the same buffers refilled in place with new values"
        chain = []
        for k, (name, values) in enumerate(REFILLS, 2):
            if name == "sparse":
                chain.append((name, values, f"called on the same buffers with {SPARSE_CHANGES} elements of each input "
                              "changed (not the first or last)", "the address and a sample of the values"))
            else:
                chain.append((name, values, refill + (f" (call {k} on them)" if k > 2 else ""),
                              "an address" if k == 2 else "an address once it repeats (a warmed-up loop)"))
        chain.append(("tail", "C", "called on inputs that differ from the last call only past their first elements",
                      "part of the input"))
        for name, values, what, cause in chain:
            run = runs.get(name)
            if not run or values not in truth:
                continue
            if run.get("error"):
                out.append(("KL209", f"the implementation raises when {what}: {run['error']}", {}))
                break
            if name == "sparse" and not _repeats(run["outputs"], [runs.get(n) for n in ("plain", REFILLS[-2][0])]):
                # A few elements changed may break what a correct kernel may assume of its inputs (sorted, paired,
                # summing to one): only an output that is the earlier call's, bit for bit, is a cache here.
                continue
            bad = _gross(run["outputs"], *truth[values])
            if bad:
                # Where the sparse change lands is random per run: the message names no element, so that it is the
                # same on every run.
                detail = "the output did not follow them" if name == "sparse" else bad
                out.append(("KL206", f"stale result when {what} ({detail}): a result cached on {cause}?", {}))
                break
        if any(code == "KL206" for code, _, _ in out):  # a cache hit explains outputs that no launch made
            out = [f for f in out if f[0] != "KL221"]
        large = runs.get("large")
        if large and "large" in truth:
            n = sum(t.numel() for t in truth["large"][0])
            if large.get("error"):
                out.append(("KL209", f"the implementation raises at a larger size ({n} output elements): "
                                     f"{large['error']}", {}))
            else:
                bad = _gross(large["outputs"], *truth["large"])
                if bad:
                    out.append(("KL200", f"wrong at a larger size ({n} output elements), beyond the sizes the "
                                         f"verifier ran: {bad} (a launcher that caps its grid?)", {}))
    return out


def _gross(outputs: list, truth: list, reference: list) -> str:
    """'' when every output is within what rounding explains; else the first gross error, described."""
    import torch
    from ..compare import compare_tensor
    if len(outputs) != len(truth):
        return f"{len(outputs)} outputs where the reference has {len(truth)}"
    for j, (y, t, r) in enumerate(zip(outputs, truth, reference)):
        name = "output" if len(outputs) == 1 else f"output {j}"
        if tuple(y.shape) != tuple(t.shape):
            return f"{name} has shape {tuple(y.shape)}, the truth {tuple(t.shape)}"
        r = r.to(y.dtype) if r.dtype != y.dtype else r
        c = compare_tensor(y, r, t.to(torch.float64) if t.is_floating_point() else t, name)
        if not c.ok and (c.code != "KL200" or _gross_at_scale(y, t)):
            return c.message
    return ""


def _gross_at_scale(y, t) -> bool:
    """An error no rounding explains, at the tensor's scale: the largest error over the largest truth beyond the
    square root of the unit roundoff (2.4e-4 in fp32, and no less for wider types: a float64 problem's kernel that
    computes in fp32 is the verifier's to judge, on the reference's spread). Relative to each element, an element
    near zero makes any accumulation order look gross (conv1d's TF32 split, 3.6e-6 off at the scale, was 0.13 off
    near zero)."""
    import math

    import torch
    from ..compare import UNIT_ROUNDOFF
    y64, t64 = y.to(torch.float64), t.to(torch.float64)
    finite = torch.isfinite(t64) & torch.isfinite(y64)
    if not bool(finite.any()):
        return False
    scale = float(t64[finite].abs().max())
    err = float((y64[finite] - t64[finite]).abs().max())
    return err > math.sqrt(max(UNIT_ROUNDOFF.get(str(y.dtype), 0.0), 2.0**-24)) * max(scale, 1e-30)


def _launch_independent(plain: list, skipped: list, refilled: list | None, aliases: set[int],
                        skipped_again: list | None = None) -> tuple[str, dict] | None:
    """Elements that come out the same with every launch skipped (and their tensors poisoned), with a second poison
    too when there is a second run (an int8 output holds the first poison's value by chance one time in 256), and
    that change with the inputs: no launch computed them."""
    import torch
    from ..compare import unravel
    total, flagged, first = 0, 0, None
    for j, (p, s) in enumerate(zip(plain, skipped)):
        if j in aliases or p.numel() == 0 or p.shape != s.shape:
            continue
        if refilled is None or j >= len(refilled) or refilled[j].shape != p.shape:
            continue  # without a second input there is no telling a constant from a copy
        varies = ~_bitwise_equal(p, refilled[j])
        if p.is_floating_point():
            varies &= ~torch.isnan(p)  # the poison is NaN: a NaN the implementation computes cannot be told from it
        same = _bitwise_equal(p, s) & varies
        if skipped_again is not None and j < len(skipped_again) and skipped_again[j].shape == p.shape:
            same &= _bitwise_equal(p, skipped_again[j])
        total += int(varies.sum())
        count = int(same.sum())
        if count and first is None:
            first = (j, unravel(int(same.reshape(-1).nonzero()[0]), tuple(p.shape)))
        flagged += count
    if not flagged:
        return None
    data = {"elements": flagged, "of": total}
    if flagged == total:
        return ("no output element depends on a Triton launch: with every launch skipped the implementation returns "
                "the same values, so the kernel's work is discarded and the result comes from elsewhere "
                "(PyTorch?)", data)
    j, index = first
    return (f"{flagged} of the {total} output elements that change with the inputs do not depend on any Triton "
            f"launch (first: output {j} at {index}): they are computed without the kernel (a partial fallback?)", data)


def _repeats(outputs: list, earlier: list) -> bool:
    """Whether `outputs` are, tensor for tensor and bit for bit, one of the `earlier` runs' outputs."""
    for run in earlier:
        old = (run or {}).get("outputs") or []
        if (outputs and len(old) == len(outputs)
                and all(a.shape == b.shape and a.dtype == b.dtype and bool(_bitwise_equal(a, b).all())
                        for a, b in zip(outputs, old))):
            return True
    return False


def _bitwise_equal(a, b):
    import torch
    if a.is_floating_point():
        both_nan = torch.isnan(a) & torch.isnan(b)
        return (a == b) | both_nan
    return a == b


def _add(sink: Sink, job: CheckJob, code: str, message: str, **data: Any) -> None:
    sink.finding(Finding(job.path, job.anchor, severity_of(code), code, message, SOURCE, data))
