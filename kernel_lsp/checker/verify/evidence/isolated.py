"""The evidence runs: the implementation called in a fresh player on inputs it has not seen, on buffers refilled in
place, with its launches skipped or watched, and judged here (docs/verification.md, "The evidence runs").

The verifier's variants judge values; these runs judge where the values come from. Once a file passes the
verifier, a second player (a fresh process: nothing of the verifier's calls in its memory) imports the
implementation and is sent, through the wire (never a file), inputs A, B and D (fresh values of the same shapes),
C (A with only its later half changed) and S (A with a few elements from B, at positions drawn from the system's
randomness), and a larger set when the launcher's sizes suggest a cap. It calls the implementation on A; on A's
buffers refilled in place fourteen times (B, D, B, A, D, B, ... A, then S: REFILLS); on C; on A with every Triton
launch skipped and the tensors it was given poisoned; on A with each launch watched (player/evidence.py). The truth
and PyTorch's own result for each set are computed here and never leave this process. Findings:
- KL220: the implementation raises, launches nothing, does not complete, or computes a wrong result there;
- KL221: output elements that no Triton launch computed (the values are the same with every launch skipped,
  and change with the inputs): the kernel's work is discarded or partly replaced by PyTorch;
- KL206: a stale result for buffers refilled in place, for a few elements changed, or for inputs that differ
  only past their first elements (a cache keyed on an address, on part of the input, or replaying once an
  address repeats);
- KL200: wrong at the larger size (a launcher that caps its grid, say);
- KL222 (information): the evidence runs could not be made, and why.
Only gross errors count here (the verifier already judged the fine precision): an error no rounding explains.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from ....jobs import CheckJob
from ....model import Severity
from ...problem.loader import _is_triton_decorator
from ..plan.variants import shrink_knobs
from ..signs import aligned, sign_free_calls

SOURCE = "kernel-lsp.rerun"
CPU_BUDGET = 1 << 13  # input and output elements of A, B and C under the CPU interpreter
GPU_BUDGET = 1 << 20  # on a GPU
LARGE_MAX = 1 << 18  # the larger set, under the interpreter: elements at most
LARGE_MAX_PROGRAMS = 2048  # and programs of the kernel's smallest block at most (the interpreter's cost)


# Planning -------------------------------------------------------------------------------------------------


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
    from ...problem.loader import float64_reference
    from ..compare import flatten_outputs
    from ..plan.variants import clone_inputs, upcast
    cuda = any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs)

    def states() -> list:  # the generators a reference may draw from: the CPU's, and the GPU's where the sets are
        return [torch.random.get_rng_state()] + ([torch.cuda.get_rng_state()] if cuda else [])
    with torch.no_grad():
        torch.manual_seed(seed)
        before = states()
        r = flatten_outputs(reference(*clone_inputs(inputs)))
        draws = not all(torch.equal(a, b) for a, b in zip(before, states()))
        t = r
        if not draws:
            ref64 = float64_reference(reference)
            torch.manual_seed(seed)
            try:
                t = flatten_outputs(ref64(*upcast(clone_inputs(inputs))))
            except Exception:
                t = r  # a reference that cannot run in float64: its own result, as the verifier does
    keep = lambda xs: [x.detach() for x in xs if isinstance(x, torch.Tensor)]  # noqa: E731
    return keep(t), keep(r), draws


class EarlyPlayer:
    """The evidence runs' fresh player, started and its module loaded in a thread while the verifier runs: on a GPU
    the player's start (its CUDA context, the first exchange through device arenas) and the module's import take
    about a second that a save's verdict would otherwise wait for. `take()` gives the player (or raises what starting
    it raised); `discard()` ends it when no evidence runs follow."""

    def __init__(self, job: CheckJob, connect, device: str):
        import threading
        self._player, self._error, self._taken = None, None, False
        self._thread = threading.Thread(target=self._start, args=(job, connect, device), daemon=True,
                                        name="evidence-player")
        self._thread.start()

    def _start(self, job: CheckJob, connect, device: str) -> None:
        from ...player import Player
        try:
            self._player = Player(connect(device), device)
            self._player.load(job.path, job.source_override, knob_files=_knob_files(job), mode="evidence")
        except BaseException as e:  # handed to take(), in the thread that judges
            self._error = e

    def take(self):
        self._thread.join()
        self._taken = True
        if self._error is not None:
            if self._player is not None:
                self._player.close()
            raise self._error
        return self._player

    def discard(self) -> None:
        if self._taken:
            return
        self._thread.join()
        self._taken = True
        if self._player is not None:
            self._player.close()


def _knob_files(job: CheckJob) -> list[str]:
    """The files whose module-level sizes the player sets (the reference's, the input factory's)."""
    return sorted({os.path.realpath(job.link.reference), os.path.realpath(job.link.inputs_path or job.link.reference)})


def run_evidence(problem, job: CheckJob, rep, connect, device: str, cpu_sizes: dict[str, int],
                 values: bool = True, cpu_setting: dict | None = None, early: EarlyPlayer | None = None) -> None:
    """Plan the sets, run them in a fresh player and judge what comes back; every finding goes to `rep`. What keeps
    the runs from being made (sizes that cannot be shrunk, a reference that rejects the sets) is KL222. `early`: the
    player started while the verifier ran (EarlyPlayer), else one is started here."""
    from ...player import Player, PlayerLost
    rep.w.stage("evidence", "fresh inputs, buffers refilled in place, launches skipped and watched")
    try:
        plan = prepare(job, problem, device, cpu_sizes, cpu_setting or {})
    except TooLarge as e:  # nothing of them was checked: a warning, so that a check that passes says so
        if early is not None:
            early.discard()
        rep.add("KL222", f"the evidence runs were not made: {e}; launches, caches and larger sizes are not checked",
                source=SOURCE, severity=Severity.WARNING)
        return
    except Exception as e:
        if early is not None:
            early.discard()
        text = str(e).splitlines()[0][:300] if str(e) else ""
        rep.add("KL222", f"the evidence runs could not be prepared: {type(e).__name__}: {text}", source=SOURCE)
        return
    where = "where it is called afresh (the evidence runs)"
    player = None
    rep.w.stage("evidence", "the runs, in a fresh player")
    try:
        if early is not None:
            player = early.take()
        else:
            player = Player(connect(device), device)
            player.load(job.path, job.source_override, knob_files=_knob_files(job), mode="evidence")
        impl = player.build(job.link.kind, "ModelNew" if job.link.kind == "kernelbench" else job.link.entry,
                            job.seed, plan["init"], plan["knobs"])
        runs = player.evidence(impl, plan["sets"], [list(r) for r in REFILLS], REFILL_BUDGET_S, job.seed,
                               plan["knobs"])
        found = judged(runs, plan["truth"], plan["random"] or not values, plan["signs"])
        if not found and not plan["random"] and values:
            rep.w.stage("evidence", "outputs held across calls, and a soak of many calls")
            found = held_outputs(player, impl, plan) or soak(player, impl, plan, device)
    except PlayerLost as e:
        rep.add("KL220", f"the implementation does not complete {where}: {e}" + (f": {e.stderr}" if e.stderr else ""),
                source=SOURCE)
        return
    except Exception as e:  # it fails to import or build there (the verifier's player did both)
        rep.add("KL220", f"the implementation fails {where}: {_said(e)}", source=SOURCE)
        return
    finally:
        if player is not None:
            player.close()
    for code, message, data in found:
        rep.add(code, message, source=SOURCE, **data)
    rep.w.stat("rerun_runs", len(runs))
    rep.w.stat("rerun_elements", plan["elements"])


SOAK_CALLS = {"cpu": (12, 24), "cuda": (200, 600)}  # calls of the soak, drawn per check within these bounds
SOAK_OPS = 300_000  # under the interpreter, the soak stops once its calls have taken this many operations
SOAK_JUDGED = 0.25  # the chance that a call's outputs are judged, decided after the call has returned


def held_outputs(player, impl, plan: dict) -> list[tuple[str, str, dict]]:
    """A caller that keeps a call's output while it calls again (a batch loop, a decode loop) must still find it
    right: the implementation called on A, its output objects kept, then on B; A's output is judged as it is after
    that. An implementation that returns the same buffer every call has B's values there."""
    import torch
    names = [n for n in ("A", "B") if n in plan["sets"]]
    if len(names) < 2:
        return []
    knobs = plan["knobs"] or None
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    first = player.call(impl, [], copy_of="set:A", return_out=False, hold=True, knobs=knobs)
    second = player.call(impl, [], copy_of="set:B", return_out=False, knobs=knobs)
    for r in (first, second):
        if r.error is not None:  # the evidence runs made these calls on these values without an error
            return [("KL209", "the implementation raises when it is called again while the caller keeps an earlier "
                     f"call's output: {_said(r.error)}", {})]
    held = [y for y in player.fetch(held=True) if isinstance(y, torch.Tensor)]
    bad = _gross(held, *plan["truth"]["A"], signs=plan["signs"])
    if not bad:
        return []
    return [("KL206", "the output of a call changed when the implementation was called again: a caller that keeps "
             "it (a batch loop, a decode loop) finds the next call's result there; a fresh output buffer per call "
             f"is what PyTorch returns ({bad})", {})]


def _said(error) -> str:
    """An exception of the implementation as a message quotes it: its type and the first line of its text."""
    text = (str(error).splitlines() or [""])[0][:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def soak(player, impl, plan: dict, device: str, rng=None) -> list[tuple[str, str, dict]]:
    """Many more calls on one set of buffers refilled in place through `.data` or, on the CPU, numpy views (their
    version counters do not move, as when a kernel writes them) and on fresh tensors, from sets A, B and D in an order drawn per check. The second
    call always refills the first call's buffers with another set, so a result remembered per tensor object and
    version counter is stale there whatever the draw. A call's outputs are fetched and judged only after the call has
    returned (nothing in the player can tell a judged call from another): every call under the interpreter, on a GPU
    a drawn quarter of them and the last. One that goes wrong after the N-th call is wrong on a judged call, for N
    below the number of calls made (drawn, so no fixed N is safe). Under the interpreter the calls stop past SOAK_OPS
    operations (a count, not a time: the same kernel gets the same bound on any machine), the last one still
    judged."""
    import random
    rng = rng or random.SystemRandom()
    low, high = SOAK_CALLS.get(device, SOAK_CALLS["cpu"])
    calls = rng.randint(low, high)
    names = [n for n in ("A", "B", "D") if n in plan["sets"]]
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    knobs = plan["knobs"] or None
    spent = 0
    held = None  # the set the kept buffers hold
    judged_share = 1.0 if device == "cpu" else SOAK_JUDGED
    for i in range(calls):  # at least SOAK_CALLS' low bound: the second call below is always made
        name = rng.choice(names)
        last = i == calls - 1 or spent > SOAK_OPS
        if held is None:
            r = player.call(impl, [], copy_of=f"set:{name}", buffers="soak-args", return_out=False, knobs=knobs)
        elif i == 1 and len(names) > 1:  # another set's values in the first call's buffers, through .data
            name = rng.choice([n for n in names if n != held])
            r = player.call(impl, [], buffers="soak-args", refill=f"set:{name}", return_out=False, knobs=knobs)
        elif rng.random() < 0.5:
            r = player.call(impl, [], copy_of=f"set:{name}", return_out=False, knobs=knobs)
        else:  # on the CPU, through a numpy view of the buffers as often as through .data
            via = "numpy" if device == "cpu" and rng.random() < 0.5 else "data"
            r = player.call(impl, [], buffers="soak-args", refill=f"set:{name}", return_out=False, knobs=knobs,
                            refill_via=via)
        if held is None:
            held = name
        spent += r.ops
        # Which call, on which set and buffers, is drawn per check: a message names none, so it is the same every run.
        how = ("on fresh tensors or on one set of buffers refilled in place through .data or numpy views (their "
               "version counters unchanged)")
        if r.error is not None:
            return [("KL209", f"the implementation raises on a later call made afresh {how}: {_said(r.error)}", {})]
        if last or i == 1 or rng.random() < judged_share:
            import torch
            out = [y for y in player.fetch() if isinstance(y, torch.Tensor)]  # as the evidence runs keep them
            bad = _gross(out, *plan["truth"][name], signs=plan["signs"])
            if bad:
                return [("KL206", f"wrong on a later call made afresh {how}, after more calls than the verifier "
                         "makes: a result remembered across calls, or one that goes wrong after a number of calls?",
                         {})]
        if last:
            break
    return []


def prepare(job: CheckJob, problem, device: str, cpu_sizes: dict[str, int], cpu_setting: dict | None = None) -> dict:
    """The sets, their truth and the implementation's build: sizes shrunk to the device's budget (and on the CPU no
    larger than the verifier's own), inputs A, B, C, D, S and maybe a larger set, each with its float64 truth and
    PyTorch's own result. A problem without size knobs runs at its own sizes on a GPU and, on the CPU, at the sizes
    the verifier read from its inputs and shrank (`cpu_setting`, shapes.py), where the reference accepts them."""
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
    signs = not problem.random and bool(sign_free_calls(reference, sets["A"]))
    if signs:
        truth = {name: (t, aligned(r, t), *rest) for name, (t, r, *rest) in truth.items()}
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


# Judging ---------------------------------------------------------------------------------------------------


def judged(runs: dict, truth: dict, random: bool, signs: bool = False) -> list[tuple[str, str, dict]]:
    """The findings of the runs, as (code, message, data); pure, so it is tested on made-up runs. With `random`
    (a random reference, or values the interpreter cannot compute faithfully) only launches are judged; with `signs`
    the outputs are defined up to the sign of each vector (signs.py)."""
    out: list[tuple[str, str, dict]] = []
    plain = runs.get("plain") or {}
    where = "where it is called afresh (the evidence runs)"
    if plain.get("error"):
        return [("KL220", f"the implementation raises {where}: {plain['error']}", {})]
    if not plain.get("launches"):
        return [("KL220", f"the implementation launches no Triton kernel {where}", {})]
    t_a, r_a = truth["A"]
    if len(plain.get("outputs", [])) != len(t_a):
        return [("KL220", f"the implementation returns {len(plain.get('outputs', []))} tensors {where}, the "
                 f"reference {len(t_a)}", {})]
    if not random:
        bad = _gross(plain["outputs"], t_a, r_a, signs)
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
            bad = _gross(run["outputs"], *truth[values], signs=signs)
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
                bad = _gross(large["outputs"], *truth["large"], signs=signs)
                if bad:
                    out.append(("KL200", f"wrong at a larger size ({n} output elements), beyond the sizes the "
                                         f"verifier ran: {bad} (a launcher that caps its grid?)", {}))
    return out


def _gross(outputs: list, truth: list, reference: list, signs: bool = False) -> str:
    """'' when every output is within what rounding explains; else the first gross error, described. `signs`: the
    outputs are defined up to the sign of each vector, brought to the truth's first (signs.py)."""
    import torch
    from ..compare import compare_tensor
    if len(outputs) != len(truth):
        return f"{len(outputs)} outputs where the reference has {len(truth)}"
    if signs:
        outputs = aligned([y.to(t.device) if isinstance(y, torch.Tensor) else y for y, t in zip(outputs, truth)],
                          truth)
    for j, (y, t, r) in enumerate(zip(outputs, truth, reference)):
        y = y.to(t.device)  # judged where the truth is
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
