"""`kernel-lsp check`: the named paths walked for kernel files, the files checked in parallel (one per worker) with
progress on stderr, the report written in the format asked for, and the run's exit code, as cli.py's docstring
says. cli.py's parser runs cmd_check.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, NoReturn

from .cache import Cache
from .cli_common import (EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERRUPTED, UsageError, _check_reference_option, _Masked,
                         _settings_for)
from .config import Settings, mask_secrets
from .model import FileReport, Severity
from .run.executor import Executor, executor_for

# Seconds a file's check may go on after its executor was lost (each ends within its executor's poll, unless it is
# held inside Ray): then the file is checked again, which a lost executor answers at once with KL303.
LOST_GRACE_S = 5.0
_SKIP_DIRS = {"__pycache__", "node_modules", ".git", ".kernel_lsp_cache", ".venv", "venv", "build", "dist"}

# A .py file this large that does not mention triton is data, not a kernel file: it is skipped without being parsed
# (a 43 MB generated module took 17 s and 3 GB to parse only to learn it holds no kernel).
PARSE_LIMIT = 1 << 20


def iter_python_files(paths: list[Path], is_fallback: Callable[[Path, str], bool] | None = None) -> list[Path]:
    """Explicit files as given; directories walked (sorted) for .py files that define Triton kernels, for files that
    link a reference but define no kernel (`is_fallback`: a PyTorch fallback, reported as a file named directly
    would be), and for every .py file that cannot be read or parsed (as ruff reports them): a broken kernel file
    must never be skipped. A file over PARSE_LIMIT that mentions neither triton nor a link is skipped unparsed.
    A file named twice (`f.py ./f.py`, or also found in a named directory) is checked once."""
    from .check import decode_source
    from .source.discover import discover_source
    from .source.lint import may_link
    out: list[Path] = []
    seen: set[str] = set()

    def add(p: Path) -> None:
        key = os.path.realpath(p) if p.exists() else os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)

    for p in paths:
        if p.is_file() or (p.is_symlink() and not p.exists()):  # a dangling link: reported as unreadable
            add(p)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                f = Path(dirpath) / name
                try:
                    text = decode_source(f.read_bytes())
                except (OSError, UnicodeDecodeError, SyntaxError):
                    add(f)  # unreadable: the checker reports it
                    continue
                linking = may_link(text)
                if "triton" not in text and not linking:
                    if len(text) > PARSE_LIMIT:
                        continue  # data, not a kernel file: not parsed
                    try:
                        compile(text, str(f), "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
                    except (SyntaxError, ValueError):
                        add(f)  # does not parse: reported (KL001), whatever it holds
                    continue
                found = discover_source(text, str(f))
                if found.syntax_error is not None or found.kernels:
                    add(f)
                elif linking and is_fallback is not None and is_fallback(f, text):
                    add(f)
    return out


def _conflicting_flags(args: argparse.Namespace) -> None:
    """Flags that contradict each other are a usage error, never one silently ignored."""
    if args.device == "cpu" and getattr(args, "gpus", None):
        raise UsageError(f"--gpus {args.gpus} with --device cpu: the interpreter runs every kernel on the CPU, so no "
                         "GPU is used; drop one of them")
    if getattr(args, "executor", None) == "local" and getattr(args, "ray_address", None):
        raise UsageError(f"--ray-address {args.ray_address} with --executor local: the address names a Ray cluster, "
                         "but --executor local checks on this machine; drop one of them")
    if args.no_verify and getattr(args, "require_reference", False):
        raise UsageError("--require-reference with --no-verify: every kernel would fail for not being verified, "
                         "since --no-verify verifies none; drop one of them")


def _output_path(option: str | None) -> Path | None:
    """The -o path, checked before the run (a usage error then, not a traceback after minutes of checking)."""
    if not option:
        return None
    out = Path(option)
    if out.is_dir():
        raise UsageError(f"-o {option}: is a directory; give a file name")
    if not out.parent.resolve().is_dir():
        raise UsageError(f"-o {option}: directory {out.parent} does not exist")
    if not os.access(out.parent.resolve(), os.W_OK):
        raise UsageError(f"-o {option}: directory {out.parent} is not writable")
    return out


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(mask_secrets(text), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Progress:
    """`[12/46] tasks/Activation/gelu_triton.py  34 s` on a terminal's stderr, rewritten in place. When stderr is not
    a terminal (a CI log), one line per finished file instead (`[12/46] done: ...`), and a heartbeat line when no
    file finished for HEARTBEAT_S: a clean check's log is never silent for minutes, and no spinner pollutes it."""

    HEARTBEAT_S = 60.0

    def __init__(self, total: int):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.enabled = sys.stderr.isatty() and total > 0
        self.logging = not self.enabled and total > 0
        self.width = 0
        self.last_line = self.start

    def update(self, current: str) -> None:
        now = time.monotonic()
        if self.enabled:
            line = f"[{self.done}/{self.total}] {current}  {now - self.start:.0f} s"
            sys.stderr.write("\r" + line.ljust(self.width))
            sys.stderr.flush()
            self.width = len(line)
        elif self.logging and now - self.last_line >= self.HEARTBEAT_S:
            self._log(f"[{self.done}/{self.total}] still checking {current}  {now - self.start:.0f} s")

    def finished(self, path: str, report: FileReport) -> None:
        self.done += 1
        if self.logging:
            worst = min((f.severity for f in report.findings), default=None)
            what = "clean" if worst is None or worst > Severity.WARNING else worst.label
            self._log(f"[{self.done}/{self.total}] done: {path} ({what})  {time.monotonic() - self.start:.0f} s")

    def _log(self, line: str) -> None:
        sys.stderr.write(f"kernel-lsp: {line}\n")
        sys.stderr.flush()
        self.last_line = time.monotonic()

    def clear(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
            self.width = 0


def cmd_check(args: argparse.Namespace) -> int:
    """Check the named paths and report their findings; the exit code as this module's docstring says."""
    output, settings, root, reference = _check_setup(args)
    files = _files_to_check(args, settings, root, reference)
    cache = Cache(None if args.no_cache else settings.cache_path(root))
    if not files:
        sys.stderr.write(f"kernel-lsp: no Triton kernel file in {', '.join(args.paths)}: nothing was checked\n")
        return EXIT_FINDINGS

    start = time.monotonic()
    # Ray prints on stdout (a dead worker's report, its processes' logs): this command's own output keeps stdout.
    out = _own_stdout() if settings.executor == "ray" else sys.stdout
    executor = executor_for(settings, workers=args.jobs)  # its workers start on first use
    stream = args.format == "text" and not output  # findings printed as each file is done
    interrupted = threading.Event()  # set on Ctrl-C: a job that starts after it is cancelled at once
    one = _file_checker(args, settings, root, reference, cache, executor, interrupted)
    reports = _check_files(files, one, executor, interrupted, out, stream)
    _write_results(args, reports, _check_stats(reports, start), root, stream, output, out)
    code = _exit_code(args, reports)
    if executor.lost:
        _leave_lost(executor, reports, code)
    return code


def _check_setup(args: argparse.Namespace) -> tuple[Path | None, Settings, Path, Path | None]:
    """Everything `check` can refuse before any work: a path that does not exist, flags that disagree, a --reference
    or -o path that cannot serve, and the settings. Returns the -o path, the settings, the project's root and the
    --reference path."""
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        link = f" (a symbolic link to {os.readlink(missing[0])})" if Path(missing[0]).is_symlink() else ""
        raise UsageError(f"path does not exist: {missing[0]}{link}")
    _conflicting_flags(args)
    _check_reference_option(args.reference)
    output = _output_path(args.output)
    settings, root = _settings_for(args)
    reference = Path(args.reference) if args.reference else None
    return output, settings, root, reference


def _files_to_check(args: argparse.Namespace, settings: Settings, root: Path, reference: Path | None) -> list[Path]:
    """The .py files of the named paths that iter_python_files keeps, a file that links a reference (through
    --reference or the settings' references) but defines no kernel being kept as a PyTorch fallback."""
    from .source.lint import fallback

    def is_fallback(path: Path, text: str) -> bool:
        return bool(fallback(path.resolve(), text, reference, root, settings.references))

    return iter_python_files([Path(p) for p in args.paths], is_fallback)


def _file_checker(args: argparse.Namespace, settings: Settings, root: Path, reference: Path | None, cache: Cache,
                  executor: Executor, cancel: threading.Event) -> Callable[[Path], FileReport]:
    """The check of one file, as a thread of the pool runs it; a job that starts after `cancel` is set is cancelled
    at once."""
    from .check import CheckRequest, check_file

    def one(path: Path) -> FileReport:
        # A dangling symbolic link is reported under its own name, not its missing target's.
        where = path.resolve() if path.exists() else path.absolute()
        req = CheckRequest(where, settings, root, reference, cache=cache, executor=executor,
                           cancel=cancel,
                           timeout_source="--timeout" if args.timeout else "`timeout` in [tool.kernel-lsp]")
        return check_file(req)

    return one


def _check_files(files: list[Path], one: Callable[[Path], FileReport], executor: Executor,
                 interrupted: threading.Event, out, stream: bool) -> list[FileReport]:
    """Check every file, one file per worker (per GPU) at a time, with progress on stderr and, when `stream`, each
    file's findings on `out` as it is done. Returns the reports in the order of `files`. A file still running once
    the executor was lost for LOST_GRACE_S is checked again in this thread; Ctrl-C ends the process."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from .render.text import file_lines

    progress = Progress(len(files))
    pool = ThreadPoolExecutor(max_workers=executor.capacity)  # one file per worker (per GPU) at a time
    done: dict[Path, FileReport] = {}

    def finished_file(path: Path, report: FileReport) -> None:
        done[path] = report
        progress.finished(os.path.relpath(path, os.getcwd()), report)
        if stream and report.findings:
            progress.clear()
            out.write("\n".join(file_lines(report, os.getcwd())) + "\n")
            out.flush()

    lost_at: float | None = None
    try:
        pending = {pool.submit(one, f): f for f in files}
        while pending:
            progress.update(os.path.relpath(next(iter(pending.values())), os.getcwd()))
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                finished_file(pending.pop(fut), fut.result())
            if pending and executor.lost:
                lost_at = lost_at or time.monotonic()
                if time.monotonic() - lost_at > LOST_GRACE_S:
                    for fut in list(pending):  # held inside Ray: this thread checks the file again
                        fut.cancel()
                        path = pending.pop(fut)
                        finished_file(path, one(path))
    except KeyboardInterrupt:
        _leave_interrupted(interrupted, progress, executor, pool, out)
    finally:
        progress.clear()
    pool.shutdown(wait=not executor.lost)  # a thread held inside Ray is left behind (see _leave_lost)
    executor.close()
    return [done[f] for f in files]


def _leave_interrupted(interrupted: threading.Event, progress: Progress, executor: Executor,
                       pool: ThreadPoolExecutor, out) -> NoReturn:
    """Stop now, not after the workers' timeouts: kill every job, then leave with EXIT_INTERRUPTED. Whatever the
    clean-up waits on, the process is gone within 5 s."""
    watchdog = threading.Timer(5.0, os._exit, (EXIT_INTERRUPTED,))
    watchdog.daemon = True
    watchdog.start()
    interrupted.set()  # every running job is killed within its executor's poll
    progress.clear()
    executor.close()
    pool.shutdown(wait=False, cancel_futures=True)
    sys.stderr.write("kernel-lsp: interrupted\n")
    sys.stderr.flush()
    out.flush()
    # Leave without joining the pool's threads: one still waiting on a job it started as Ctrl-C came would
    # hold the exit for that job's whole timeout.
    os._exit(EXIT_INTERRUPTED)


def _check_stats(reports: list[FileReport], start: float) -> dict:
    """The run's statistics (JSON output's `stats`): files, cache hits, workers, compiles, seconds since `start`
    and the kernels' coverage."""
    from .verdict import coverage
    return {"files": len(reports), "cache_hits": sum(1 for r in reports if r.cached),
            "workers_spawned": sum(r.stats.get("workers", 0) for r in reports),
            "warm_workers": sum(r.stats.get("warm_workers", 0) for r in reports),
            "compiles": sum(r.stats.get("compiles", 0) for r in reports),
            "seconds": round(time.monotonic() - start, 3), **coverage(reports)}


def _write_results(args: argparse.Namespace, reports: list[FileReport], stats: dict, root: Path, stream: bool,
                   output: Path | None, out) -> None:
    """The timings on stderr (--timings), the HTML report (--report), and the report in the format asked for, to
    the -o file or to `out`."""
    if args.timings:
        from .render.text import timing_lines
        sys.stderr.write("\n".join(line for r in reports for line in timing_lines(r, os.getcwd())) + "\n")
    if args.report:
        from .render.report import write_report
        write_report(reports, Path(args.report), str(root))
    text = _report_text(args, reports, stats, root, stream)
    if output:
        write_atomically(output, text)
    else:
        out.write(text)
        out.flush()


def _report_text(args: argparse.Namespace, reports: list[FileReport], stats: dict, root: Path, stream: bool) -> str:
    """The report as JSON, SARIF or text; streamed text holds only the summary, its findings having gone out as each
    file was done."""
    from .render.json_ import render_json
    from .render.sarif import render_sarif
    from .render.text import file_lines, summary_lines
    if args.format == "json":
        return render_json(reports, stats)
    if args.format == "sarif":
        return render_sarif(reports, str(root))
    if stream:
        return "\n".join(summary_lines(reports)) + "\n"
    return "\n".join([line for r in reports for line in file_lines(r, os.getcwd())] + summary_lines(reports)) + "\n"


def _leave_lost(executor: Executor, reports: list[FileReport], code: int) -> NoReturn:
    """Say on stderr how many files the lost executor left unfinished (KL303), and end the process with `code` at
    once: Ray's exit handler (ray.shutdown) would take 5-15 s more with the head lost, and a thread still inside a Ray
    call would wait on the head."""
    unchecked = sum(1 for r in reports if any(f.code == "KL303" and executor.lost in f.message
                                               for f in r.findings))
    sys.stderr.write(f"kernel-lsp: {executor.lost}: {unchecked} file(s) not finished (KL303)\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)


def _exit_code(args: argparse.Namespace, reports: list[FileReport]) -> int:
    """A finished check's exit code; a 1 that no finding explains is said on stderr."""
    from .verdict import coverage
    worst = [f for r in reports for f in r.findings if f.severity <= Severity.WARNING]
    c = coverage(reports)
    if not c["kernels"] and not any(r.findings for r in reports):
        # As for a directory without kernel files: a file named directly that defines no kernel is no pass.
        sys.stderr.write(f"kernel-lsp: no Triton kernel in {', '.join(args.paths)}: nothing was checked\n")
        return EXIT_FINDINGS
    unverified = c["unlinked"] + c["unverified"] + c["compile_failed"]
    if args.require_reference and unverified:
        sys.stderr.write(f"kernel-lsp: {unverified} kernel(s) not verified against a reference "
                         "(--require-reference)\n")
        return EXIT_FINDINGS
    return EXIT_FINDINGS if worst else EXIT_CLEAN


def _own_stdout():
    """This command's output on a copy of file descriptor 1, while descriptor 1 and sys.stdout go to stderr for
    everything else in the process (Ray's workers, raylet and driver print there: a dead worker's report inside
    `--format json` made it unparseable)."""
    import io
    sys.stdout.flush()
    kept = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"), encoding=sys.stdout.encoding or "utf-8",
                            errors="backslashreplace", line_buffering=True)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return _Masked(kept)
