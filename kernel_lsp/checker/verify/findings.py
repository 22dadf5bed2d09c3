"""The verification's report: each failure placed on a line (the store that wrote the bad element, else the launch
site) and previewed as it is found, the findings aggregated per (code, line, cause) when verification ends, the
per-variant table in the kernel facts, and what is said of the kernels themselves (not verified, untaken branches,
the interpreter's limits). One part of the Verifier (verifier.py): the schedule, the runs and the reference side
record through it, the coordinator asks it for the report."""

from __future__ import annotations

import re
from typing import Any

from ...model import KernelFacts, Severity, SkippedVariant, Span, VariantRow, Verification
from ..player import CallResult
from .autotune_configs import configs_prefix
from .compare import Comparison
from .context import Failure, VerifyContext
from .plan.variants import Variant
from .rules import Evidence, RuleFinding, describe_variant


def where(v: Variant, shapes: str | None) -> str:
    return describe_variant(v.kind, v.name, v.description, shapes)


class Findings:
    """Failures recorded (fail, collect_oob, row) and placed (place), and the final report (report). Besides the
    shared record (the context's state) it keeps what only the report reads, each written by the part named."""

    def __init__(self, ctx: VerifyContext):
        self.ctx = ctx
        self.outside: dict[str, str] = {}  # variant -> how its inputs leave the problem's distribution (runs.py)
        self.limits: dict[str, list[str]] = {}  # the interpreter's limit -> the variants it stopped (runs.py)
        self.configs: dict[str, tuple[str, int, int, str]] = {}  # config variant -> (kernel, index, of, config)
        # Block-size variants stopped past their operations budget: (variant, budget, names of the kernels launched
        # in it) (schedule.py).
        self.stopped: list[tuple[str, int, set[str]]] = []

    def place(self, f: RuleFinding, e: Evidence, writers: list | None, store_lines: list | None) -> int | None:
        """The line a rule's finding belongs on: the store that wrote the bad element (`writers` and `store_lines`:
        the first run's tracked stores, runs.py), else the launch site."""
        if f.place == "none":
            return None
        if f.place == "result":
            return e.result_line
        if f.place == "store" and f.comparison is not None:
            return self.line_for(f.output, f.comparison, writers, store_lines)
        return self.ctx.launch_line()

    def line_for(self, j: int, c: Comparison, writers: list | None, store_lines: list | None) -> int | None:
        """The line that stored output j's worst element (the first run's tracked stores), else the launch site."""
        if c.worst_index is not None and writers and j < len(writers):
            if c.code == "KL203":
                lines = (store_lines or [])[j] if j < len(store_lines or []) else []
                if lines:
                    return lines[0]
            else:
                lines = writers[j]
                try:
                    line = int(lines[tuple(c.worst_index)]) if lines is not None else -1
                except (IndexError, TypeError, ValueError):
                    line = -1
                if line >= 0:
                    return line
        return self.ctx.launch_line()

    def collect_oob(self, v: Variant, r: CallResult) -> None:
        for b in r.breaches:
            where = "past the end of" if b.get("side") == "after" else "before the start of"
            self.fail("KL208", v, f"a store {where} {b.get('label')}: {b.get('changed')} guard byte(s) changed, up to "
                      f"{b.get('reach')} bytes {b.get('side')} it (GPU guard regions; variant {v.name})",
                      self.ctx.launch_line(), kind="store", count=b.get("changed"))
        for ev in r.oob:
            what = {"load": "reads", "store": "writes", "atomic": "updates"}.get(ev.get("kind"), "touches")
            self.fail("KL208", v, f"{ev.get('kernel')} {what} out of bounds: {ev.get('count')} access(es), e.g. "
                      f"{ev.get('detail')} (variant {v.name})", ev.get("line"), kind=ev.get("kind"),
                      count=ev.get("count"))

    def fail(self, code: str, v: Variant, message: str, line: int | None, severity: str | None = None,
             **data: Any) -> None:
        kind = _cause(code, v)
        failures = self.ctx.state.failures
        new = not any(f.code == code and f.line == line and _cause(f.code, f.variant) == kind for f in failures)
        failures.append(Failure(code, v, message, line, data, severity))
        if new and not self.ctx.state.probing:
            # The first failure of a cause is shown at once; the final finding (every variant it failed on)
            # replaces it when verification ends.
            ln = line if line is not None else self.ctx.launch_line()
            level = _LEVELS.get(severity or "") or (Severity.WARNING if v.name in self.outside else None)
            self.ctx.rep.preview(code, message, Span(ln, 0) if ln is not None else None, source="kernel-lsp.verify",
                             severity=level, variant=v.name, **data)

    def row(self, v: Variant, shapes: str, verdict: str, c: Comparison | None) -> None:
        ran = sorted({launch.spec.name for launch in self.ctx.launched()})
        self.ctx.state.rows.append(VariantRow(v.name, v.description, shapes, verdict, c.max_abs if c else None,
                                          c.ref_max_abs if c else None, kernels=ran))

    def report(self, seconds: float, unrepeatable: str | None) -> None:
        """The final findings, replacing the previews; `unrepeatable`: where the reference changed when called twice
        on the same inputs (truth.py), which leaves nothing judged."""
        rep, state, sizing = self.ctx.rep, self.ctx.state, self.ctx.sizing
        if unrepeatable:
            rep.add("KL007", f"the reference is not deterministic: two calls on the same inputs differ "
                    f"({unrepeatable}); it draws random numbers it does not seed, so no implementation can "
                    "match it element by element, and no value was judged; for a random op, set "
                    "`KERNEL_LSP_RANDOM = True` in the reference's module to compare distributions instead "
                    "(docs/verification.md, Random ops); otherwise seed or remove the draws",
                    None, source="kernel-lsp.verify")
            return
        if not state.rows and state.skipped:
            # Nothing was judged: saying nothing would read as a clean bill of health.
            name, reason = state.skipped[0]
            rep.add("KL003", f"no input variant could be verified: the reference failed on every one "
                    f"(first, {name}: {reason})", None, source="kernel-lsp.verify",
                    skipped=[n for n, _ in state.skipped])
        self.report_failures()
        self.interpreter_limits()
        ran = self.ran_kernels()
        stopped = self.report_stopped(ran)
        self.report_untaken_branches(ran)
        # A kernel is verified by the variants it ran on (a file may dispatch: a TMA path at the problem's own
        # sizes, a pointer path at odd ones); rows where no kernel ran concern every kernel.
        for name in sorted(ran - set(stopped)):
            rows = [r for r in state.rows if not r.kernels or name in r.kernels]
            summary = Verification(rows, [SkippedVariant(n, r) for n, r in state.skipped],
                                   "cpu-interpreter" if self.ctx.interpreted else "cuda", round(seconds, 3),
                                   dict(sizing.base), self.ctx.player.guarded, round(sizing.first_cpu_seconds, 3),
                                   sizing.first_ops)
            rep.w.kernel(name, KernelFacts(verification=summary))

    def report_failures(self) -> None:
        """One finding per cause: a value failure, a layout failure and a size failure at the same store are three
        causes (a stride bug must not ride inside a rounding finding as "also on: strided")."""
        rep = self.ctx.rep
        groups: dict[tuple, list[Failure]] = {}
        for f in self.ctx.state.failures:
            kind = _cause(f.code, f.variant)
            groups.setdefault((f.code, f.line, kind), []).append(f)
        compile_errors = [f.message for f in rep.sent if f.code == "KL100"]
        groups = {key: fs for key, fs in groups.items() if not (key[0] == "KL209" and any(
            _core(fs[0].data.get("cause", "")) in m for m in compile_errors if _core(fs[0].data.get("cause", ""))))}
        cached = {line for code, line, _ in groups if code == "KL206"}
        if cached:
            # One cause, one finding: a cached result also launches nothing on a cache hit (KL205) and is wrong
            # where the cache was filled on other inputs (KL200/KL201 at the same store).
            groups = {(code, line, kind): fs for (code, line, kind), fs in groups.items()
                      if code != "KL205" and not (code in ("KL200", "KL201") and line in cached)}
        fallback = self.ctx.launch_line()
        for (code, line, _), fs in groups.items():
            first = fs[0]
            others = sorted({f.variant.name for f in fs[1:]} - {first.variant.name})
            msg = first.message + (f" (also on: {', '.join(others)})" if others else "")
            if all(f.variant.name in self.configs for f in fs):
                msg = configs_prefix([self.configs[f.variant.name] for f in fs]) + msg
            severity = _merged_severity(fs)
            outside = all(f.variant.name in self.outside for f in fs)
            if outside and severity != Severity.INFO:
                # Only where the inputs leave the signs the problem always gives them: a warning that says so.
                severity = Severity.WARNING
                msg += (f"; only on inputs outside the problem's own distribution ({self.outside[first.variant.name]}):"
                        " the problem's own inputs pass")
            ln = line if line is not None else fallback
            rep.add(code, msg, Span(ln, 0) if ln is not None else None, source="kernel-lsp.verify",
                    severity=severity, variant=first.variant.name, variants=[f.variant.name for f in fs],
                    **first.data, **({"outside_distribution": True} if outside else {}))

    def report_stopped(self, ran: set[str]) -> dict[str, tuple[str, int]]:
        """A kernel launched in a stopped block-size variant is not verified, whatever the other variants found (a
        kernel launched only there was cut from the recorder with the variant: pipeline.report_unexercised reports
        it). Returns the stopped kernels' names, each with its variant and budget."""
        stopped: dict[str, tuple[str, int]] = {}
        for vname, budget, launched in self.stopped:
            for name in launched:
                stopped.setdefault(name, (vname, budget))
        for qual, fn, _, _ in self.launched_sources():
            if fn.__name__ in stopped and fn.__name__ in ran:
                vname, budget = stopped[fn.__name__]
                self.ctx.rep.add("KL104", f"kernel {fn.__name__} is not verified: its block-size variant {vname} was "
                                 f"stopped after {budget:,} interpreter operations in one run, too slow for the CPU "
                                 "interpreter at those sizes; check it with --device cuda",
                                 self.ctx.rep.kernel_span(qual), source="kernel-lsp.verify", severity=Severity.INFO,
                                 kernel=qual, variant=vname)
        return stopped

    def report_untaken_branches(self, ran: set[str]) -> None:
        """KL104 (information) for each side of an `if` on a kernel's constexprs that no launch took (branches.py)."""
        from .branches import untaken
        job, rep = self.ctx.job, self.ctx.rep
        try:
            source = job.source_override
            if source is None:
                with open(job.path, encoding="utf-8") as f:
                    source = f.read()
        except (OSError, UnicodeDecodeError):
            return
        by_kernel: dict[str, list[dict]] = {}
        for spec in self.ctx.recorder.spec_list:
            by_kernel.setdefault(spec.name, []).append(dict(spec.constexprs))
        for name in sorted(ran):
            for u in untaken(source, name, by_kernel.get(name, [])):
                part = "the body" if u.side == "true" else "the else branch"
                rep.add("KL104", f"kernel {name}: {part} of `if {u.condition}:` never ran (every launch had "
                        f"{u.seen}): that path is not verified; no variant's sizes, dtypes or flags select it",
                        Span(u.line - 1, 0), source="kernel-lsp.verify", severity=Severity.INFO, kernel=name,
                        branch=u.side)

    def ran_kernels(self) -> set[str]:
        """The names of the kernels launched on some variant so far."""
        return {k for r in self.ctx.state.rows for k in r.kernels}

    def launched_sources(self):
        """(qualname, kernel, source, argument types) for each recorded kernel whose source the player could read."""
        for qual, fn in self.ctx.recorder.functions.items():
            src = fn.source
            if src is None:
                continue
            dtypes = {t for l in self.ctx.recorder.launches if l.spec.qualname == qual
                      for t in _flat_types(l.spec.signature.values())}
            yield qual, fn, src, dtypes

    def untrusted_kernels(self) -> dict[str, str]:
        """Kernels whose numbers the CPU interpreter gets wrong, with the reason (measured on Triton 3.9): those with
        an fp8 tensor of a format whose casts the player does not make faithful (player/interpreter_gaps.py makes
        bf16 dots and the bf16, fp8e4nv and fp8e5 casts round as the GPU does; the interpreter's own fp8 casts drop
        the mantissa's carry, 7.9 -> 4.0, and round ties away from even)."""
        if not self.ctx.interpreted:
            return {}
        out = {}
        for qual, _, src, dtypes in self.launched_sources():
            # pointer types read "*fp8e4b15", tensor descriptors "tensordesc<fp8e4b15[128, 64]>"; and the kernel's
            # code names the format (tl.float8e4b15): an argument of that type it never casts is no reason to leave
            # its values unjudged (a wrong kernel passed so)
            if (any(fmt in t for t in dtypes for fmt in UNFAITHFUL_FP8)
                    and _names_any(src, {"float8" + fmt.removeprefix("fp8") for fmt in UNFAITHFUL_FP8})):
                out[qual] = ("fp8 casts of this format in this Triton's CPU interpreter drop the mantissa carry "
                             "(7.9 becomes 4.0) and break ties away from even")
        return out

    def interpreter_limits(self) -> None:
        if not self.ctx.interpreted:
            return
        rep, recorder = self.ctx.rep, self.ctx.recorder
        judged = [r for r in self.ctx.state.rows if r.verdict not in ("raised", "cpu-limit")]
        for limit, names in self.limits.items():
            # Not the kernel's failure: a warning when it left nothing judged (as KL106), else a note.
            rep.add("KL210", f"cannot be verified on the CPU: {limit}; Triton's interpreter stopped on "
                    f"{len(names)} variant(s) ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}): "
                    "verify it on a GPU (--device cuda or a runner)", rep.launch_span(recorder),
                    source="kernel-lsp.verify", severity=Severity.INFO if judged else Severity.WARNING,
                    variants=names, values_judged=False)
        untrusted, verified = self.untrusted_kernels(), self.ran_kernels()
        for qual, fn, src, dtypes in self.launched_sources():
            span = rep.kernel_span(qual)
            if qual in untrusted and fn.__name__ in verified:
                rep.add("KL210", f"{fn.__name__}: {untrusted[qual]}, so values were not judged here "
                        "(bounds, unwritten outputs, launches and shapes were); verify the numbers on a GPU",
                        span, source="kernel-lsp.verify", values_judged=False)
            fp32 = any(t == "*fp32" or t.startswith("tensordesc<fp32") for t in dtypes)
            ran = recorder.tf32.get(qual)  # None: the dots were not watched, so the source decides
            if ran or (ran is None and "tl.dot" in src and fp32 and not _FP32_DOT.search(src)):
                rep.add("KL210", f"{fn.__name__}: tl.dot on fp32 uses TF32 on the GPU by default (about 1e-3 "
                        "relative error) while the CPU interpreter computes it exactly; pass "
                        "input_precision=\"ieee\" if fp32 accuracy is intended", span, source="kernel-lsp.verify")


def _names_any(source: str, names: set[str]) -> bool:
    """Whether the code (not a string or a comment) of a kernel's source refers to any of `names`, as a name or an
    attribute (`tl.float8e4b15`)."""
    import ast
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return True  # unreadable: as before, the argument types decide
    return any((isinstance(n, ast.Attribute) and n.attr in names) or (isinstance(n, ast.Name) and n.id in names)
               for n in ast.walk(tree))


# fp8 formats whose casts the CPU interpreter gets wrong and the player leaves as they are (AMD's fnuz formats and
# Triton's own e4b15); fp8e4nv and fp8e5 it makes faithful.
UNFAITHFUL_FP8 = ("fp8e4b15", "fp8e4b8", "fp8e5b16")
# An fp32 tl.dot whose precision is spelled out as fp32-accurate: IEEE, or three TF32 products (tf32x3: about
# fp32's error, which the GPU run judges; the interpreter computes every precision exactly).
_FP32_DOT = re.compile(r"""input_precision\s*=\s*["'](ieee|tf32x3)["']|allow_tf32\s*=\s*False""")


def takes_float_scalars(recorder) -> bool:
    """Some launched kernel takes a float scalar argument (an fp32 in its signature), the way a Python float reaches a
    compiled kernel."""
    return any(t == "fp32" for launch in recorder.launches for t in _flat_types(launch.spec.signature.values()))


SPLIT_BY_KIND = ("KL200", "KL201", "KL203", "KL207", "KL209")  # findings kept apart per variant kind


def _cause(code: str, v: Variant) -> str:
    """What keeps two failures of one code at one line apart: the variant kind for the codes split by it, and an
    autotune config's failures always (they belong to configs this run did not pick)."""
    return v.kind if code in SPLIT_BY_KIND or v.kind == "config" else ""


_LEVELS = {"info": Severity.INFO, "warning": Severity.WARNING}


def _merged_severity(failures: list[Failure]) -> Severity | None:
    """The most severe of a group's failures; None (the code's own severity) when any has no lowered one."""
    levels = [_LEVELS.get(f.severity or "") for f in failures]
    if any(level is None for level in levels):
        return None
    return Severity.WARNING if Severity.WARNING in levels else Severity.INFO


def _flat_types(types) -> list[str]:
    """Triton type names, a tuple argument's (`x.shape`: ("i32", "i32")) unpacked: strings only."""
    out: list[str] = []
    for t in types:
        out += _flat_types(t) if isinstance(t, (tuple, list)) else [str(t)]
    return out


def _core(cause: str) -> str:
    """An exception's own words, without the wrapper's class names (InterpreterError: NotImplementedError: ...)."""
    return cause.rsplit(": ", 1)[-1].strip()
