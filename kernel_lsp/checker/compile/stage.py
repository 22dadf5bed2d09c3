"""The compile stage: every captured specialization compiled for every target by the player (Triton's own compiler,
no GPU needed), its errors placed on the kernel's lines and its resources (shared memory, registers) judged against
each target's limits (KL100-KL103)."""

from __future__ import annotations

from typing import Any

from ...model import CompileFacts, KernelFacts, Severity, Span
from ...player.capture import Spec
from ...player.compiler import CompileResult
from ...targets import Target
from ..player import Player
from ..reporter import Reporter
from .positions import map_compile_error, readable


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def compile_stage(rep: Reporter, player: Player, targets: list[Target],
                  captured: tuple[list, list] | None = None) -> set[str]:
    """Compile every captured spec for every target (in the player, where the kernels' functions are); returns the
    kernels that failed to compile. `captured`: the capture's (specs, launches), when the recorder has since seen
    the verifier's launches too."""
    recorder = player.recorder
    failed: set[str] = set()
    errors: dict[tuple, dict[str, Any]] = {}
    specs, launches = captured if captured is not None else (list(recorder.specs.values()), recorder.launches)
    launched_keys = {l.spec.key() for l in launches}
    compiled: list[tuple[Spec, Target, CompileResult]] = []
    by_name = {t.name: t for t in targets}
    for spec in specs:
        rep.w.stage("compile", f"{spec.qualname} for {', '.join(by_name)} ({spec.describe()})")
        facts = []
        for r in player.compile([spec], targets):
            target = by_name.get(r["target"])
            if target is None:
                continue
            result = CompileResult(target.name, spec, bool(r["ok"]), int(r.get("shared") or 0), r.get("registers"),
                                   r.get("local"), r.get("stack"), float(r.get("seconds") or 0.0),
                                   RemoteCompileError.chain(r["error"]) if r.get("error") else None)
            rep.w.stat("compiles")
            if not result.ok:
                failed.add(spec.qualname)
                _collect_error(rep, errors, rep.kernel(spec.qualname), spec, target, result)
                continue
            facts.append(CompileFacts(target.name, spec.describe(), True, result.shared, result.registers,
                                      result.local_bytes, result.stack_bytes, spec.num_warps,
                                      round(result.seconds, 3)))
            compiled.append((spec, target, result))
        rep.w.kernel(spec.qualname.rsplit(".", 1)[-1], KernelFacts(compile=facts))
    for spec, target, result in compiled:
        # An autotune config the target cannot run is skipped there, when another config of the kernel fits: the
        # one the CPU's autotuner picks (the first) included.
        skipped = spec.qualname in recorder.autotuners and any(
            s.qualname == spec.qualname and t is target and s.key() != spec.key() and _fits(r, t)
            for s, t, r in compiled)
        _judge_resources(rep, spec, target, result, from_config_only=spec.key() not in launched_keys or skipped)
    for (line, col, end_col, message), info in errors.items():
        rep.add("KL100", f"compile error ({', '.join(info['targets'])}): {message}",
                Span(line, col, line, end_col), source="kernel-lsp.compile",
                kernel=info["kernel"], targets=info["targets"], config=info["config"])
    return failed


class RemoteCompileError(Exception):
    """A compile error the player reported (player/compiler.py `error_chain`), rebuilt as a chain of exceptions
    with the attributes `positions.map_compile_error` reads (error_message, src, node)."""

    def __init__(self, link: dict):
        super().__init__(link.get("text") or "")
        self.error_message = link.get("error_message")
        self.src = link.get("src")
        node = link.get("node")
        self.node = None if not node else _Node(*node)
        self.name = str(link.get("type") or "Exception")

    def __str__(self) -> str:
        return self.args[0] if self.args else ""

    @classmethod
    def chain(cls, links: list[dict]) -> "RemoteCompileError":
        errors = [cls(link) for link in links] or [cls({"text": "compile failed"})]
        for outer, inner in zip(errors, errors[1:]):
            outer.__cause__ = inner
        return errors[0]


class _Node:
    def __init__(self, lineno, col_offset=0, end_lineno=None, end_col_offset=None):
        self.lineno, self.col_offset, self.end_lineno, self.end_col_offset = lineno, col_offset, end_lineno, end_col_offset


def _fits(r: CompileResult, target: Target) -> bool:
    """The compiled kernel launches on the target: shared memory and registers per block within its limits."""
    threads = r.spec.num_warps * target.warp_size
    return r.shared <= target.max_shared_per_block and (r.registers is None
                                                       or r.registers * threads <= target.registers_per_block)


def _collect_error(rep, errors, kernel, spec: Spec, target: Target, result: CompileResult) -> None:
    if kernel is None:
        pos_key = (rep.anchor.line, rep.anchor.col, rep.anchor.col + 1, readable(str(result.error))[:500])
    else:
        pos = map_compile_error(result.error, kernel, rep.kernels)
        pos_key = (pos.line, pos.col, pos.end_col, pos.message[:2000])
    entry = errors.setdefault(pos_key, {"targets": [], "kernel": spec.qualname, "config": spec.describe()})
    if target.name not in entry["targets"]:
        entry["targets"].append(target.name)


def _judge_resources(rep: Reporter, spec: Spec, target: Target, r: CompileResult, from_config_only: bool) -> None:
    span = rep.kernel_span(spec.qualname)
    where = f"{spec.name} ({spec.describe()})"
    data = {"kernel": spec.qualname, "target": target.name, "config": spec.describe()}
    # An autotune config that does not fit is skipped by the autotuner at run time: advice, not an error.
    sev = Severity.ERROR if not from_config_only else Severity.INFO
    if r.shared > target.max_shared_per_block:
        tail = ("launching it there raises OutOfResources" if not from_config_only
                else "the autotuner will skip this config there")
        rep.add("KL101", f"{where} needs {_kib(r.shared)} of shared memory; {target.name} allows "
                f"{_kib(target.max_shared_per_block)} per block: {tail}", span, "kernel-lsp.compile", sev,
                shared=r.shared, limit=target.max_shared_per_block, **data)
    if r.registers is not None:
        threads = spec.num_warps * target.warp_size
        if r.registers * threads > target.registers_per_block:
            rep.add("KL103", f"{where} uses {r.registers} registers x {threads} threads = {r.registers * threads}, "
                    f"over {target.name}'s {target.registers_per_block} per block: the launch fails there",
                    span, "kernel-lsp.compile", None if not from_config_only else sev, registers=r.registers, **data)
    if r.local_bytes:
        rep.add("KL102", f"{where} spills on {target.name}: {r.local_bytes} bytes of local memory per thread "
                f"({r.registers} registers); try smaller tiles or fewer stages", span, "kernel-lsp.compile",
                registers=r.registers, spill_bytes=r.local_bytes, **data)
