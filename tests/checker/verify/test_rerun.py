"""The evidence runs (checker/verify/evidence/isolated.py): what their judge concludes from made-up runs, what the
reference side keeps of a file that also holds the implementation (checker/problem/loader.py), and which sizes a
launcher could single out. The processes themselves are exercised end to end by the corpus (bug_launch_discarded.py,
bug_partial_fallback.py, bug_cache_first_element.py, bug_grid_capped.py, ok_zero_init_lower_triangle.py)."""

from __future__ import annotations

import torch

from kernel_lsp.checker.problem.loader import reference_source
from kernel_lsp.checker.verify.evidence.judge import judged
from kernel_lsp.checker.verify.evidence.sets import _launcher_literals

X = torch.linspace(-2, 2, 101)
TRUTH_A = torch.relu(X.double())
B = torch.linspace(-3, 1, 101)
TRUTH_B = torch.relu(B.double())
C = torch.cat([X[:50], B[50:]])
TRUTH_C = torch.relu(C.double())
TRUTH = {"A": ([TRUTH_A], [TRUTH_A.float()]), "B": ([TRUTH_B], [TRUTH_B.float()]),
         "C": ([TRUTH_C], [TRUTH_C.float()])}


def runs(plain=None, skipped=None, refilled=None, tail=None, launches=1, **extra):
    plain = torch.relu(X) if plain is None else plain
    out = {"plain": {"outputs": [plain], "launches": launches},
           "skipped": {"outputs": [torch.full_like(X, float("nan")) if skipped is None else skipped],
                       "launches": launches},
           "refilled": {"outputs": [torch.relu(B) if refilled is None else refilled], "launches": launches},
           "tail": {"outputs": [torch.relu(C) if tail is None else tail], "launches": launches}}
    out.update(extra)
    return out


def codes(found):
    return [code for code, _, _ in found]


def test_rerun_a_correct_implementation_gives_nothing():
    assert judged(runs(), TRUTH, random=False) == []


def test_rerun_launch_and_discard_is_kl221_for_the_whole_output():
    found = judged(runs(skipped=torch.relu(X)), TRUTH, False)
    assert codes(found) == ["KL221"] and "no output element depends" in found[0][1]


def test_rerun_a_partial_fallback_counts_only_elements_that_change_with_the_inputs():
    skipped = torch.relu(X).clone()
    skipped[:60] = float("nan")  # the kernel computed the first 60; PyTorch the rest
    ((code, message, data),) = judged(runs(skipped=skipped), TRUTH, False)
    changing = int((torch.relu(X) != torch.relu(B))[60:].sum())
    assert code == "KL221" and data["elements"] == changing and "partial fallback" in message


def test_rerun_constant_elements_are_not_a_fallback():
    """Zeros that stay zeros (a masked region set by torch.zeros) do not change with the inputs: not flagged."""
    plain, skipped = torch.relu(X), torch.relu(X).clone()
    skipped[X > 0] = float("nan")  # only the zeros come out the same with the launches skipped
    skipped[X <= 0] = 0.0
    assert "KL221" not in codes(judged(runs(skipped=skipped, refilled=torch.relu(B)), TRUTH, False))


def test_rerun_checker_aware_code_is_kl220():
    half = torch.relu(X).clone()
    half[50:] = 0
    assert codes(judged(runs(plain=half), TRUTH, False)) == ["KL220"]
    assert codes(judged(runs(launches=0), TRUTH, False)) == ["KL220"]
    raising = runs()
    raising["plain"] = {"outputs": [], "launches": 1, "error": "RuntimeError: not under the checker"}
    ((code, message, _),) = judged(raising, TRUTH, False)
    assert code == "KL220" and "not under the checker" in message


def test_rerun_caches_are_kl206_and_explain_an_unlaunched_result():
    by_address = judged(runs(refilled=torch.relu(X)), TRUTH, False)
    assert codes(by_address) == ["KL206"] and "an address" in by_address[0][1]
    by_prefix = judged(runs(tail=torch.relu(X), skipped=torch.relu(X)), TRUTH, False)
    assert codes(by_prefix) == ["KL206"] and "part of the input" in by_prefix[0][1]


def test_rerun_replays_late_in_the_chain_and_sparse_changes_are_kl206():
    """A replay from the ninth call on one set of buffers, and a cache keyed on the address and a sample of the
    values (the sparse change: its message names no element, since where the change lands is random per run)."""
    from kernel_lsp.checker.verify.evidence.sets import REFILLS
    sets = {"A": X, "B": B, "D": -X}
    truth = {**TRUTH, "D": ([torch.relu(-X.double())], [torch.relu(-X)])}
    s = X.clone()
    s[[7, 40, 66, 90]] = B[[7, 40, 66, 90]]
    truth["S"] = ([torch.relu(s.double())], [torch.relu(s)])
    sets["S"] = s
    chain = {name: {"outputs": [torch.relu(sets[v])], "launches": 1} for name, v in REFILLS}
    assert judged({**runs(), **chain}, truth, False) == []
    late = dict(chain, **{"refilled-9": {"outputs": [torch.relu(X)], "launches": 1}})  # B's call returns A's
    found = judged({**runs(), **late}, truth, False)
    assert codes(found) == ["KL206"] and "(call 10 on them)" in found[0][1] and "once it repeats" in found[0][1]
    sparse = dict(chain, sparse={"outputs": [torch.relu(X)], "launches": 1})
    found = judged({**runs(), **sparse}, truth, False)
    assert codes(found) == ["KL206"] and "did not follow them" in found[0][1] and "output[" not in found[0][1]
    # Wrong there but not the earlier output (a kernel that relies on something the change broke): not a cache.
    other = dict(chain, sparse={"outputs": [torch.relu(s) * 2], "launches": 1})
    assert judged({**runs(), **other}, truth, False) == []


def test_rerun_rounding_is_not_an_error():
    nudged = torch.nextafter(torch.relu(X), torch.full_like(X, 10.0))
    assert judged(runs(plain=nudged), TRUTH, False) == []


def test_rerun_wrong_only_at_the_larger_size_is_kl200():
    big = torch.linspace(-2, 2, 40001)
    capped = torch.relu(big).clone()
    capped[16384:] = 0
    truth = {**TRUTH, "large": ([torch.relu(big.double())], [torch.relu(big)])}
    found = judged(runs(large={"outputs": [capped], "launches": 1}), truth, False)
    assert codes(found) == ["KL200"] and "larger size" in found[0][1]


def test_rerun_random_references_are_judged_on_launches_only():
    assert judged(runs(plain=torch.rand(101)), TRUTH, random=True) == []
    assert codes(judged(runs(plain=torch.rand(101), skipped=None, launches=0), TRUTH, True)) == ["KL220"]


def test_rerun_reference_source_keeps_the_reference_and_drops_the_implementation_and_patches():
    source = '''
import torch
import triton
import triton.language as tl
M, N = 16, 513
torch.nn.functional.gelu = lambda x: x
setattr(torch, "relu", lambda x: x)

@triton.jit
def _k(x_ptr):
    pass

def gelu(x):
    return x

def ref(x):
    return torch.nn.functional.gelu(x)

def make_inputs():
    return [torch.randn(M, N)]

if __name__ == "__main__":
    print(ref(make_inputs()[0]))
'''
    kept = reference_source(source, {"gelu"}, {"ref", "make_inputs"})
    namespace: dict = {}
    exec(compile(kept, "<ref>", "exec"), namespace)
    assert set(namespace) >= {"torch", "M", "N", "ref", "make_inputs"}
    assert "_k" not in namespace and "gelu" not in namespace and "__main__" not in kept
    assert "lambda" not in kept  # the patches of torch are gone: they would bend the truth
    assert "triton" not in namespace  # an import the reference side never names
    lines, original = kept.splitlines(), source.splitlines()
    assert len(lines) == len(original) and lines[original.index("def ref(x):")] == "def ref(x):"  # the file's lines


def test_rerun_launcher_literals_leave_out_module_sizes_and_kernels():
    source = '''
N = 4000
@triton.jit
def _k(x, BLOCK: tl.constexpr):
    y = 8192
def relu(x):
    programs = min(triton.cdiv(x.numel(), 256), 64)
    return programs
'''
    assert _launcher_literals(source) == [64, 256]


def test_rerun_nans_the_implementation_computes_are_not_taken_for_the_poison():
    plain = torch.relu(X).clone()
    plain[::7] = float("nan")  # log of a negative, say: NaN in both runs, since the poison is NaN too
    skipped = torch.full_like(X, float("nan"))
    assert judged(runs(plain=plain, skipped=skipped), {**TRUTH, "A": ([plain.double()], [plain])}, False) == []


def test_rerun_an_int8_output_that_holds_the_poison_by_chance_is_not_a_fallback():
    """quant_int8 on the H200: 83 of 250342 int8 outputs equal the first poison (-121) by chance; a second skipped
    run with another poison tells them apart."""
    plain = torch.randint(-127, 128, (4096,), dtype=torch.int8)
    plain[::50] = -121
    refilled = plain.roll(1)
    first = torch.full_like(plain, -121)
    second = torch.full_like(plain, 124)
    found = judged({"plain": {"outputs": [plain], "launches": 1}, "refilled": {"outputs": [refilled], "launches": 1},
                    "skipped": {"outputs": [first], "launches": 1}, "skipped-2": {"outputs": [second], "launches": 1}},
                   {"A": ([plain.double()], [plain])}, random=True)
    assert found == []


def test_rerun_an_error_small_at_the_tensors_scale_is_not_gross_even_near_zero():
    """conv1d's TF32 hi/lo split on the H200: 3.6e-6 off at the tensor's scale, 0.13 off at an element near zero."""
    truth = torch.linspace(-3, 3, 1001, dtype=torch.float64)
    y = (truth + 1e-5 * torch.sin(truth * 7)).float()
    assert judged(runs(plain=y), {**TRUTH, "A": ([truth], [truth.float()])}, False) == []


def _harness():
    """player/evidence.py as the player loads it (a plain module beside the other player files)."""
    import importlib.util
    import sys
    from pathlib import Path
    here = Path(__file__).resolve().parents[3] / "kernel_lsp" / "player"
    sys.path.insert(0, str(here))
    try:
        spec = importlib.util.spec_from_file_location("kl_test_harness", here / "evidence.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(here))


class _Descriptor:
    """Stands in for triton.tools.tensor_descriptor.TensorDescriptor: a kernel reads and writes its `base`."""

    def __init__(self, base):
        self.base = base


def test_rerun_a_launch_through_tensor_descriptors_is_watched_and_poisoned_through_their_tensors():
    """A TMA kernel stores through a descriptor, not a tensor argument. Seen as arguments, its launch "changed
    nothing" (a correct TMA linear layer was KL221 on an H200) and a skipped launch poisoned nothing."""
    harness = _harness()

    class Kernel:
        def run(self, x_desc, out_desc, **kwargs):
            out_desc.base.copy_(torch.relu(x_desc.base) * 2)

    launches = harness.Launches()
    launches._wrap(Kernel)
    x, out = torch.randn(64), torch.zeros(64)
    launches.protected = [x]
    launches.watch = True
    Kernel().run(_Descriptor(x), _Descriptor(out))
    assert launches.kinds == ["compute"] and torch.equal(out, torch.relu(x) * 2)
    launches.watch, launches.skip = False, True
    Kernel().run(_Descriptor(x), _Descriptor(out))
    assert torch.isnan(out).all() and not torch.isnan(x).any()  # the output poisoned, the call's input kept

    class TupleKernel:  # descriptors handed over in a tuple
        def run(self, descs, **kwargs):
            descs[1].base.copy_(descs[0].base + 1)

    launches.skip, launches.watch = False, True
    launches.kinds = []
    launches._wrap(TupleKernel)
    TupleKernel().run((_Descriptor(x), _Descriptor(out)))
    assert launches.kinds == ["compute"]


def test_rerun_a_self_seeded_reference_is_judged_on_launches_only_when_the_player_runs_on_a_gpu():
    """`torch.manual_seed(0); torch.log(x + 0.5 * torch.randn_like(x))` draws the same numbers on every call of one
    device; the truth is drawn on the CPU, a player on a GPU draws from CUDA's generator (ok_seeded_noise_log.py
    was KL220 on an H200). On the CPU the values are still judged."""
    from pathlib import Path

    from kernel_lsp.checker.problem.loader import load_problem
    from kernel_lsp.checker.verify.evidence.sets import prepare
    from kernel_lsp.jobs import CheckJob, LinkSpec
    from kernel_lsp.model import Span
    case = str(Path(__file__).resolve().parents[2] / "corpus" / "ok_seeded_noise_log.py")
    link = LinkSpec("native", case, "ref", inputs_path=case, inputs_name="make_inputs", entry="noisy_log")
    job = CheckJob(case, link, [], Span(0))
    problem = load_problem(link, case, 0)  # the reference side alone, as the checker holds it
    seen = {device: prepare(job, problem, device, {})["random"] for device in ("cpu", "cuda")}
    assert seen == {"cpu": False, "cuda": True}


def test_rerun_any_warning_of_the_verifier_spares_the_evidence_runs_information_does_not():
    """A verifier's warning (a race, KL207; spills, KL102; the interpreter could not run it, KL210) fails the file
    already, as an error does: no evidence runs. Information (the TF32 advice, KL210; not exercised, KL104) does not
    skip them. They run before the measure stage, so no performance finding is there to consider."""
    from kernel_lsp.checker.pipeline import gathers_evidence
    from kernel_lsp.checker.reporter import Reporter
    from kernel_lsp.jobs import CheckJob, LinkSpec, ListSink
    from kernel_lsp.model import Severity, Span
    job = CheckJob("/w/k.py", LinkSpec("native", "/w/k.py", "ref"), [], Span(0))

    def reporter(*found):
        rep = Reporter(ListSink(), job.path, [], Span(0))
        for code, sev in found:
            rep.add(code, "m", severity=sev)
        return rep
    assert gathers_evidence(job, reporter())
    assert gathers_evidence(job, reporter(("KL210", Severity.INFO), ("KL104", Severity.INFO)))
    for code in ("KL207", "KL102", "KL210", "KL104", "KL106", "KL200"):
        assert not gathers_evidence(job, reporter((code, Severity.WARNING))), code
    assert not gathers_evidence(job, reporter(("KL200", Severity.ERROR)))
    job.rerun.enabled = False
    assert not gathers_evidence(job, reporter())


class MemoPlayer:
    """A player whose implementation remembers its result per buffer object and version counter, as
    tests/corpus/bug_memo_keyed_on_version.py does: a refill through .data (the counter unchanged) gets the
    result of the values those buffers held before."""

    def __init__(self, sets):
        self.sets, self.buffers, self.memo, self.out = sets, None, None, None

    def stash(self, sets):
        pass

    def call(self, impl, args, copy_of=None, buffers=None, refill=None, **_):
        from types import SimpleNamespace
        if refill is not None:  # the same objects, new values, same version counter: the memo answers
            self.out = self.memo
        else:
            values = self.sets[copy_of[len("set:"):]]
            self.out = [torch.relu(values[0])]
            if buffers is not None:
                self.memo = self.out
        return SimpleNamespace(error=None, ops=1)

    def fetch(self, held=False):
        return self.out

    def calls(self, impl, calls):
        """As the player does: each call in order, a copy of each one's outputs kept as it returned."""
        results, self.kept = [], []
        for c in calls:
            results.append(self.call(impl, [], **c))
            self.kept.append([y.clone() for y in self.out])
        return results

    def fetch_calls(self, indices):
        return [self.kept[i] for i in indices]


def test_soak_finds_a_result_remembered_per_buffer_and_version_whatever_the_draw():
    """The soak's order is drawn per check; its second call refills the first call's buffers with another set and
    is judged, so a memo keyed on the tensor object and its version counter is wrong there on every draw (it passed
    on some draws when that refill was left to chance: CI saw the corpus case pass once and fail once)."""
    import random
    from kernel_lsp.checker.verify.evidence.soak import soak
    sets = {"A": [X], "B": [B], "D": [-X]}
    plan = {"sets": sets, "knobs": {},
            "truth": {n: ([torch.relu(v[0].double())], [torch.relu(v[0])]) for n, v in sets.items()}}
    for seed in range(200):
        for device in ("cpu", "cuda"):
            assert codes(soak(MemoPlayer(sets), None, plan, device, random.Random(seed))) == ["KL206"], (seed, device)
