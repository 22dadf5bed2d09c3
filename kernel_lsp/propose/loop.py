"""The proposer loop: prompt -> candidates -> screen -> compile -> verify -> measure -> select -> accept.

Runs in the parent (the language server or `kernel-lsp optimize`); every candidate runs only in workers, through
the same `check_file` as any user file, several at once. Each step is a function with a typed result:
- `fix`: an LLM proposes versions of the file; a candidate is accepted only when the diagnostics it targeted are
  gone and no new error or warning appeared, and a second, fresh check of it agrees (determinism);
- `optimize`: an LLM proposes faster versions; `tune`: the launch literals are searched (tune.py), no LLM. Both
  keep only verified candidates, pick the fastest, and re-time it against the current kernel in one interleaved
  measurement: it is accepted only when the whole 95% interval of that speedup lies above 1 (the best of several
  noisy timings is biased up; the race is fresh). Without a GPU nothing is timed, so nothing is accepted.
Failures (the screen's words, compile errors, the verifier's findings) go into the next round's prompt.

Before round 1 the contract is frozen (contract.py): the link and the reference texts every check of the request
uses, and what a candidate may not change. A reply becomes a candidate in steps (intake.py): parsed (edits.py),
refused when it touches the contract or bloats the file, screened (screen.py), reduced to its changes inside the
implementation (region.py, whose result holds nothing the screen did not see); only then does a worker run it. The
proposer works on the file with `\n` line endings; an accepted text gets the file's own endings back (edits.restyle).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..check import CheckRequest, check_file
from ..config import Settings, apply_overrides
from ..model import Candidate, FileReport, Measurement, Proposal, Severity
from ..run.executor import Executor
from ..verdict import fixable, unacceptable
from . import contract, edits, tune
from .intake import Intake
from .llm import Budget, Cancelled, LLMError

MODES = ("fix", "optimize", "tune")


class ExecutorLost(Exception):
    """The executor the checks run on can run none any more (a Ray cluster whose head was lost): the request ends
    saying so, rather than judge the file and its candidates by their KL303s, or ask the model for more."""


@dataclass
class ProposeRequest:
    mode: str  # fix, optimize or tune
    path: Path
    text: str  # the file as the editor holds it (or as it is on disk)
    settings: Settings
    root: Path | None = None
    kernel: str | None = None
    candidates: int | None = None  # per round; default: the llm settings (tune: up to tune.MAX_CONFIGS)
    rounds: int | None = None
    reference: Path | None = None  # as `check --reference` takes it
    executor: Executor | None = None  # where candidates run (run/executor.py); fresh processes when None
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Callable[[str], None] = lambda message: None
    fix_codes: set[str] | None = None  # fix: the codes to fix (default: every KL1xx and KL2xx error or warning)


def _summary_lines(report: FileReport) -> list[str]:
    return [f"{f.code} line {f.span.line + 1}: {f.message[:300]}" for f in unacceptable(report)]


def _measurement(report: FileReport) -> Measurement | None:
    return next((k.measurement for k in report.kernels.values() if k.measurement is not None), None)


def _variants(report: FileReport):
    return next((k.verification.variants for k in report.kernels.values() if k.verification is not None), [])


class Proposer(Intake):
    def __init__(self, req: ProposeRequest):
        if req.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.original = req.text  # as the editor or the disk has it; the accepted text gets its line endings
        self.req = req = dataclasses.replace(req, text=edits.normalize_newlines(req.text))
        self.contract = contract.freeze_file(req.path, req.text, req.reference, req.root, req.settings.references)
        self.started = time.monotonic()
        llm = req.settings.llm
        self.budget = Budget(llm.max_tokens, llm.max_seconds)
        self.rounds = req.rounds or (llm.rounds if req.mode != "tune" else 2)
        self.per_round = req.candidates or (llm.candidates if req.mode != "tune" else tune.MAX_CONFIGS)
        self.workers = req.executor.capacity if req.executor is not None else req.settings.workers

    # Running checks -----------------------------------------------------------------------------------------
    def _checkpoint(self) -> None:
        if self.req.cancel.is_set():
            raise Cancelled()

    def check(self, text: str, *, measure: bool = True, compile_only: bool = False,
              against: str | None = None, rerun: bool = True) -> FileReport:
        self._checkpoint()
        # Candidates are compared with each other and raced against the current kernel: torch.compile's time would
        # only cost seconds per candidate here (the final file's check measures it again).
        overrides: dict = {"measure": {"mode": "auto" if measure else "off",
                                       "compile": False if text != self.req.text else
                                       self.req.settings.measure.compile}}
        if compile_only:
            overrides.update(verification=False, device="cpu")
        if not rerun:
            overrides["isolated_rerun"] = False
        settings = apply_overrides(self.req.settings, overrides)
        executor = self.req.executor
        if compile_only and executor is not None:
            executor = executor.local()  # compiling for a target needs no GPU
        # The request's cancel event is the check's: setting it kills every candidate's worker at once.
        # Every check runs against the link and the reference texts frozen before round 1, whatever is on disk now.
        report = check_file(CheckRequest(self.req.path, settings, self.req.root, self.req.reference, source=text,
                                         cancel=self.req.cancel, executor=executor, measure_against=against,
                                         link=self.contract.link, pinned=self.contract.pinned))
        self._checkpoint()
        if executor is not None and executor.lost:
            raise ExecutorLost(f"{executor.lost}, so nothing more could be checked (KL303)")
        return report

    def check_many(self, texts: list[str], **kw) -> list[FileReport]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda t: self.check(t, **kw), texts))

    # The loop ----------------------------------------------------------------------------------------------
    def run(self) -> Proposal:
        req = self.req
        untimed = req.settings.timing_unavailable() if req.mode in ("optimize", "tune") else None
        if untimed:
            # Nothing can be accepted where nothing is timed: say so before any check or request.
            return Proposal(req.mode, str(req.path), False, f"nothing can be accepted: {untimed}; a {req.mode} "
                            "needs a GPU (a CUDA machine, or a runner) to time candidates", tokens=0, seconds=0.0)
        if req.mode in ("fix", "optimize"):
            try:
                self._llm().preflight()  # a wrong endpoint is said at once, not after the file's check
            except LLMError as e:
                return Proposal(req.mode, str(req.path), False, f"no proposal: {e}", notes=[str(e)],
                                seconds=round(time.monotonic() - self.started, 2))
        req.progress("checking the current file")
        proposal = Proposal(req.mode, str(req.path), False, "")
        try:
            # The user's own file: the evidence runs guard against candidates (each one gets it); what it would say
            # of the user's code is `check`'s to say.
            baseline = self.check(req.text, rerun=False)
            on_gpu = baseline.stats.get("device") == "cuda"
            proposal.before = _measurement(baseline)
            if req.mode == "fix":
                self.fix(baseline, proposal)
            elif req.mode == "optimize":
                self.optimize(baseline, proposal, on_gpu)
            else:
                self.tune(baseline, proposal, on_gpu)
        except (LLMError, ExecutorLost) as e:
            proposal.summary = f"no proposal: {e}"
            proposal.notes.append(str(e))
        proposal.tokens = self.budget.tokens
        proposal.seconds = round(time.monotonic() - self.started, 2)
        return proposal

    def fix(self, baseline: FileReport, proposal: Proposal) -> None:
        req = self.req
        targeted = [f for f in unacceptable(baseline) if fixable(f.code)
                    and (req.fix_codes is None or f.code in req.fix_codes)]
        if not targeted:
            proposal.summary = "nothing to fix: no compile or verification error or warning in this file"
            return
        target_codes = {f.code for f in targeted}
        others = Counter(f.code for f in unacceptable(baseline) if f.code not in target_codes)
        llm = self._llm()
        failures: list[Candidate] = []
        for round_no in range(1, self.rounds + 1):
            asked = self._ask(baseline, failures, round_no, proposal, llm)
            if not asked:
                continue
            req.progress(f"round {round_no}: verifying {len(asked)} candidate(s)")
            reports = self.check_many([t for _, t in asked], measure=False)
            passing = []
            for (origin, text), report in zip(asked, reports):
                bad = unacceptable(report)
                still = sorted({f.code for f in bad if f.code in target_codes})
                new = Counter(f.code for f in bad if f.code not in target_codes) - others
                c = Candidate(origin, "verified", findings=_summary_lines(report),
                              diff_lines=len(edits.unified_diff(req.text, text, "f").splitlines()))
                if still:
                    c.verdict, c.reason = "rejected", f"still has {', '.join(still)}"
                elif new:
                    c.verdict, c.reason = "rejected", f"introduces {', '.join(sorted(new))}"
                elif self.unverified(report):
                    c.verdict, c.reason = "rejected", self.unverified(report)
                proposal.candidates.append(c)
                if c.verdict == "verified":
                    passing.append((c, text, report))
                else:
                    failures.append(c)
            for c, text, report in sorted(passing, key=lambda p: p[0].diff_lines):
                req.progress("checking the fix once more in a fresh job")
                again = self.check(text, measure=False)
                if (unacceptable(again) and any(f.code in target_codes for f in unacceptable(again))) or self.unverified(again):
                    c.verdict, c.reason = "rejected", "a second check of it disagrees (not deterministic)"
                    failures.append(c)
                    continue
                c.verdict = "accepted"
                self._accept(proposal, text, again, f"fixes {', '.join(sorted(target_codes))}; verified on "
                                                    f"{_device(again)} ({len(_variants(again))} input variants)")
                return
        proposal.summary = (f"no verified fix in {len(proposal.candidates)} candidate(s): "
                            + (failures[-1].reason if failures else "the model gave none"))

    def optimize(self, baseline: FileReport, proposal: Proposal, on_gpu: bool) -> None:
        if unacceptable(baseline):
            proposal.summary = "fix the file first: only a verified kernel is optimized"
            return
        llm = self._llm()
        failures: list[Candidate] = []
        verified: list[tuple[Candidate, str]] = []
        for round_no in range(1, self.rounds + 1):
            asked = self._ask(baseline, failures, round_no, proposal, llm)
            if asked:
                verified += self._judge_speed(asked, proposal, failures, on_gpu, round_no)
        self._select(baseline, proposal, verified, on_gpu)

    def tune(self, baseline: FileReport, proposal: Proposal, on_gpu: bool) -> None:
        req = self.req
        if unacceptable(baseline):
            proposal.summary = "fix the file first: only a verified kernel is tuned"
            return
        sites = tune.launch_sites(req.text, req.kernel)
        if not sites:
            proposal.summary = ("nothing to tune: no launch passes integer literals for tile sizes, and no "
                                "@triton.autotune list of literal configs")
            return
        site = sites[0]
        tried = {tune.describe(tune.current(site))}
        verified: list[tuple[Candidate, str]] = []
        center = req.text
        for round_no in range(1, self.rounds + 1):
            center_site = next(s for s in tune.launch_sites(center, site.kernel) if type(s) is type(site))
            settings = [v for v in tune.configs(center_site, self.per_round) if tune.describe(v) not in tried]
            tried |= {tune.describe(v) for v in settings}
            if not settings:
                break
            texts = [tune.apply(center, center_site, v) for v in settings]
            origins = [f"tune {tune.describe(v)}" for v in settings]
            req.progress(f"round {round_no}: compiling {len(texts)} configs for {', '.join(req.settings.targets)}")
            compiled = self.check_many(texts, measure=False, compile_only=True)
            survivors = []
            for origin, text, report, setting in zip(origins, texts, compiled, settings):
                # An error, or (for an autotune entry) the information that the autotuner will skip the new entry
                pruned = [f for f in report.findings if f.code in ("KL100", "KL101", "KL103")
                          and (f.severity == Severity.ERROR or tune.describe(setting) in f.message)]
                if pruned:
                    proposal.candidates.append(Candidate(origin, "rejected", "pruned by the compile stage: "
                                                         + pruned[0].message[:200]))
                else:
                    survivors.append((origin, text))
            if not on_gpu:
                proposal.notes.append(f"no GPU: {len(survivors)} of {len(texts)} configs compile within the "
                                      f"targets' limits and {len(texts) - len(survivors)} were pruned; timing needs "
                                      "a GPU, so nothing was changed")
                proposal.candidates += [Candidate(o, "not run", "no GPU to time it") for o, _ in survivors]
                proposal.summary = proposal.notes[-1]
                return
            found = self._judge_speed(survivors, proposal, [], on_gpu, round_no)
            verified += found
            if not verified:
                break
            center = min(verified, key=lambda p: p[0].median_us or float("inf"))[1]  # climb from the best so far
        self._select(baseline, proposal, verified, on_gpu)

    def _judge_speed(self, asked: list[tuple[str, str]], proposal: Proposal, failures: list[Candidate], on_gpu: bool,
                     round_no: int) -> list[tuple[Candidate, str]]:
        self.req.progress(f"round {round_no}: verifying and timing {len(asked)} candidate(s)")
        reports = self.check_many([t for _, t in asked], measure=True)
        out = []
        for (origin, text), report in zip(asked, reports):
            bad = unacceptable(report)
            m = _measurement(report)
            c = Candidate(origin, "verified", findings=_summary_lines(report),
                          diff_lines=len(edits.unified_diff(self.req.text, text, "f").splitlines()))
            impossible = [f for f in report.findings if f.code in ("KL403", "KL405", "KL406")]
            if bad:
                c.verdict, c.reason = "rejected", "fails verification: " + ", ".join(sorted({f.code for f in bad}))
            elif self.unverified(report):
                c.verdict, c.reason = "rejected", self.unverified(report)
            elif impossible:
                c.verdict, c.reason = "rejected", f"{impossible[0].code}: {impossible[0].message[:200]}"
            elif on_gpu and m is None:
                c.verdict, c.reason = "rejected", "not measured"
            if m is not None:
                c.median_us = m.side("triton").median_us if m.side("triton") else None
            proposal.candidates.append(c)
            if c.verdict == "verified":
                out.append((c, text))
            else:
                failures.append(c)
        return out

    def _select(self, baseline: FileReport, proposal: Proposal, verified: list[tuple[Candidate, str]],
                on_gpu: bool) -> None:
        if not verified:
            proposal.summary = (proposal.summary or
                                f"no verified candidate in {len(proposal.candidates)} tried: nothing changed")
            return
        if not on_gpu:
            proposal.notes.append(f"{len(verified)} candidate(s) verified on the CPU, but without a GPU none can be "
                                  "timed, so none is accepted (set a runner to measure on a GPU)")
            proposal.summary = proposal.notes[-1]
            return
        best, text = min(verified, key=lambda p: p[0].median_us or float("inf"))
        best.verdict = "selected"
        self.req.progress(f"racing the fastest candidate ({best.origin}) against the current kernel")
        race = self.check(text, measure=True, against=self.req.text)
        m = _measurement(race)
        speed = m.speedup("current") if m else None
        best.speedup = speed
        if unacceptable(race) or speed is None:
            best.verdict, best.reason = "rejected", "the race could not be run: " + "; ".join(_summary_lines(race)[:2])
            proposal.summary = f"no accepted candidate: {best.reason}"
            return
        if not speed.low > 1.0:
            best.verdict = "rejected"
            best.reason = (f"{speed.ratio:.2f}x the current kernel (95% CI {speed.low:.2f}-{speed.high:.2f}): "
                           "not faster beyond doubt")
            proposal.summary = f"no real win: the fastest candidate is {best.reason}"
            return
        best.verdict = "accepted"
        self._accept(proposal, text, race, f"{speed.ratio:.2f}x faster than the current kernel (95% CI "
                                           f"{speed.low:.2f}-{speed.high:.2f}), verified; {m.summary}")

    def unverified(self, report: FileReport) -> str | None:
        """Why a candidate's clean report proves nothing: verification is on, and not one input variant ran."""
        if self.req.settings.verification and not _variants(report):
            return "not verified: no input variant was run (a candidate must be verified against the reference)"
        return None

    def _accept(self, proposal: Proposal, text: str, report: FileReport, summary: str) -> None:
        proposal.accepted = True
        proposal.new_text = edits.restyle(self.original, text)
        proposal.diff = edits.unified_diff(self.req.text, text, self.req.path.name)
        proposal.after = _measurement(report)
        proposal.variants = list(_variants(report))
        proposal.summary = summary


def _device(report: FileReport) -> str:
    return "the GPU" if report.stats.get("device") == "cuda" else "the CPU"


def propose(req: ProposeRequest) -> Proposal:
    return Proposer(req).run()
