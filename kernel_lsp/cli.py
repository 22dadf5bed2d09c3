"""Command line: `kernel-lsp check` (headless, for CI), `optimize`, `serve` (LSP over stdio) and `worker`.

Exit codes, decided here and only here: 0 when no finding of severity warning or error, 1 when there is one (or
nothing was checked, or with --require-reference a kernel was not verified), 2 for usage or configuration errors
(a path that does not exist, a bad flag, a broken [tool.kernel-lsp], an output path that cannot be written),
130 when interrupted. An executor lost mid-run (a Ray cluster's head) is no code of its own: every file it did not
finish is a KL303 finding, so the run exits 1 with its whole report written.
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

from . import __version__
from .cache import Cache
from .config import (ConfigError, Settings, apply_overrides, find_git_root, find_pyproject, load_pyproject,
                     mask_secrets)
from .device import DEVICES, gpu_present
from .model import FileReport, Severity
from .render.report import ReportError
from .run.executor import Executor, check_gpus, executor_for

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# Seconds a file's check may go on after its executor was lost (each ends within its executor's poll, unless it is
# held inside Ray): then the file is checked again, which a lost executor answers at once with KL303.
LOST_GRACE_S = 5.0
# The settings a flag sets: errors name the flag the user typed.
FLAGS = {"targets": "--target", "timeout": "--timeout", "device": "--device", "workers": "--jobs",
         "runner": "--runner", "runners": "--runner", "gpus": "--gpus", "executor": "--executor",
         "ray_address": "--ray-address"}
DOCS_URL = "https://github.com/kernel-lsp/kernel-lsp/tree/main/docs"
_SKIP_DIRS = {"__pycache__", "node_modules", ".git", ".kernel_lsp_cache", ".venv", "venv", "build", "dist"}


class UsageError(Exception):
    """Bad command-line usage; exit code 2."""


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


def _settings_for(args: argparse.Namespace) -> tuple[Settings, Path]:
    start = Path(args.paths[0]) if args.paths else Path.cwd()
    pyproject = Path(args.config) if args.config else find_pyproject(start)
    settings, root = load_pyproject(pyproject)
    runners = list(args.runner or [])
    flags = {"targets": args.target, "timeout": args.timeout, "device": args.device, "workers": args.jobs,
             "runner": runners[0] if len(runners) == 1 else None, "runners": runners if len(runners) > 1 else None,
             "gpus": getattr(args, "gpus", None), "ray_address": getattr(args, "ray_address", None),
             "executor": getattr(args, "executor", None) or ("ray" if getattr(args, "ray_address", None) else None)}
    for key, value in flags.items():  # one at a time, so an error names the flag that caused it
        try:
            settings = apply_overrides(settings, {key: value})
        except ConfigError as e:
            raise UsageError(f"{FLAGS[key]}: {str(e).split(': ', 1)[-1]}") from None
    extra: dict = {}
    if args.no_verify:
        extra["verification"] = False
    if args.no_measure:
        extra["measure"] = {"mode": "off"}
    settings = apply_overrides(settings, extra)
    if (settings.device == "cuda" and not (settings.runner or settings.runners) and settings.executor == "local"
            and not gpu_present()):
        origin = "--device cuda" if args.device == "cuda" else "device = \"cuda\" in [tool.kernel-lsp]"
        raise UsageError(f"{origin}, but this machine has no CUDA GPU: use --device cpu (Triton's interpreter) "
                         "or --runner to check on a machine that has one")
    problem = check_gpus(settings)
    if problem:
        raise UsageError(problem)
    # Without a pyproject.toml, the project is the git checkout the path is in; failing both, the current directory
    # (whose cache then goes to the user's cache directory unless it is itself a project: config.cache_path).
    return settings, (root or find_git_root(start) or Path.cwd()).resolve()


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


def _check_reference_option(option: str | None) -> None:
    if option and Path(option).is_dir():
        raise UsageError(f"--reference {option}: is a folder; name the reference's Python file")
    if option and not Path(option).is_file():
        raise UsageError(f"--reference file does not exist: {option}")


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
    once: Ray's exit handlers (and a thread still inside Ray) would wait on the lost head for a minute, and then Ray
    would end the process with status 1 itself."""
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


def cmd_optimize(args: argparse.Namespace) -> int:
    """Propose a change to one file (fix, optimize or tune), verify it, and print the diff and its evidence."""
    import json
    import threading

    from .propose.apply import ApplyError, read_source_file, write_back
    from .propose.loop import Cancelled, ProposeRequest, propose
    from .render.text import render_proposal

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"file does not exist: {args.file}")
    _check_reference_option(args.reference)
    if args.candidates is not None and not 1 <= args.candidates <= 64:
        raise UsageError("--candidates: expected 1 to 64")
    if args.rounds is not None and not 1 <= args.rounds <= 10:
        raise UsageError("--rounds: expected 1 to 10")
    args.paths = [args.file]
    settings, root = _settings_for(args)
    if args.mode in ("fix", "optimize") and not settings.llm.endpoint:
        raise UsageError(f"--mode {args.mode} needs an LLM: set [tool.kernel-lsp.llm] endpoint (and model), "
                         "see docs/code-actions.md; --mode tune needs none")
    untimed = settings.timing_unavailable() if args.mode in ("optimize", "tune") else None
    if untimed:
        # Refused before the first request: no token is spent on candidates that cannot be accepted.
        raise UsageError(f"--mode {args.mode} accepts only a candidate timed faster than the current kernel, but "
                         f"{untimed}: run it on a CUDA machine or with --runner 'ssh gpu-box kernel-lsp worker' "
                         "(docs/performance-method.md); --mode fix needs no GPU")
    try:
        source = read_source_file(path)  # the bytes an --apply may replace, and only those
    except ApplyError as e:
        raise UsageError(str(e)) from None
    executor = executor_for(settings)
    cancel = threading.Event()
    req = ProposeRequest(args.mode, path.resolve(), source.text, settings, root, args.kernel, args.candidates,
                         args.rounds, Path(args.reference).resolve() if args.reference else None, executor, cancel,
                         progress=lambda m: sys.stderr.write(f"kernel-lsp: {m}\n") if not args.quiet else None)
    try:
        proposal = propose(req)
    except (Cancelled, KeyboardInterrupt):
        cancel.set()
        return 130
    finally:
        executor.close()
    applied = True
    if args.apply and proposal.accepted and proposal.new_text is not None:
        try:
            write_back(source, proposal.new_text)
            proposal.notes.append(f"applied to {path}")
        except ApplyError as e:
            # The verified edit is still printed below: nothing is lost, and the user can apply it by hand.
            applied = False
            sys.stderr.write(f"kernel-lsp: {e}\n")
            proposal.notes.append(str(e))
    if args.format == "json":
        sys.stdout.write(json.dumps(proposal.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_proposal(proposal))
    return EXIT_CLEAN if proposal.accepted and applied else EXIT_FINDINGS


def cmd_init_tasks(args: argparse.Namespace) -> int:
    """Copy the bundled tasks into DIR, for a user who installed the wheel (a clone has them at tasks/)."""
    from .bundled import BundleError, copy_tasks
    try:
        count = copy_tasks(Path(args.dir))
    except BundleError as e:
        raise UsageError(str(e)) from None
    sys.stdout.write(f"copied {count} files to {args.dir}; check them with: kernel-lsp check {args.dir}\n")
    return EXIT_CLEAN


def cmd_worker(args: argparse.Namespace) -> int:
    from .run.serve import contained
    return contained(["--device", args.device] + (["--sandbox", args.sandbox] if args.sandbox else []))


def cmd_serve(args: argparse.Namespace) -> int:
    from .lsp.main import serve
    serve()
    return EXIT_CLEAN


def torch_build() -> str:
    """`torch 2.13.0+cpu (CPU build: ...)` from torch's own version file, without importing torch (seconds)."""
    import importlib.util
    import re
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return ("torch: not installed (install torch first: README.md, e.g. pip install torch==2.13.0 "
                "--extra-index-url https://download.pytorch.org/whl/cpu)")
    try:
        text = Path(spec.origin).with_name("version.py").read_text(encoding="utf-8")
    except OSError:
        return "torch: installed, but its version file cannot be read"
    field = {k: v for k, v in re.findall(r"^(\w+)(?:: [^=]+)? = '([^']*)'", text, re.M)}
    version = field.get("__version__", "?")
    if field.get("cuda"):
        build = f"CUDA {field['cuda']} build: kernels run on an NVIDIA GPU when one is present"
    elif field.get("hip") or field.get("rocm"):
        build = f"ROCm {field.get('rocm') or field.get('hip')} build: kernels run on an AMD GPU when one is present"
    else:
        build = "CPU build: kernels run in Triton's interpreter; a GPU needs a CUDA build or a runner"
    return f"torch {version} ({build}), at {Path(spec.origin).parent}"


def version_text() -> str:
    """What `kernel-lsp --version` prints: kernel-lsp, the torch build and Triton this interpreter would run checks
    with, and the interpreter. Computed only when asked (argparse calls it), so no other command pays for it."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        triton = f"triton {version('triton')}"
    except PackageNotFoundError:
        triton = "triton: not installed"
    return "\n".join([f"kernel-lsp {__version__}", torch_build(), triton,
                      f"python {sys.version.split()[0]} at {sys.executable}"])


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(version_text() + "\n")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 itself; keep its message short and ours
        self.print_usage(sys.stderr)
        sys.stderr.write(f"kernel-lsp: error: {message}\n")
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kernel-lsp", description="Compile and verify Triton kernels against PyTorch references.",
                epilog=f"Documentation: {DOCS_URL} (docs/ in a clone); `kernel-lsp COMMAND --help` for each command.")
    p.add_argument("--version", action=_VersionAction, help="kernel-lsp's version, the torch build (CPU, CUDA or "
                   "ROCm) and Triton it runs checks with, and the Python interpreter")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("check", help="check files or directories headlessly",
                       description="Compile every Triton kernel for the targets, verify it against its PyTorch "
                       "reference, and (on a GPU) time it against PyTorch. Directories are walked for .py files that "
                       "define kernels, files that link a reference without defining one (a PyTorch fallback, "
                       "KL205), and any .py file that does not parse.",
                       epilog="exit codes: 0 no error or warning; 1 an error or warning, no kernel file found, or "
                       "(with --require-reference) a kernel not verified; 2 usage or configuration error; "
                       f"130 interrupted. Every code is explained in {DOCS_URL}/diagnostics.md. Results are "
                       "cached in .kernel_lsp_cache/ at the project root (the nearest "
                       "pyproject.toml or git checkout), else in ~/.cache/kernel-lsp (--no-cache to bypass).")
    c.add_argument("paths", nargs="+", help="files or directories")
    c.add_argument("--reference", help="reference file (KernelBench problem) for every checked file")
    c.add_argument("--target", help="comma-separated GPU targets, e.g. sm_80,sm_90 (default sm_90)")
    c.add_argument("--format", choices=["text", "json", "sarif"], default="text",
                   help="text: a short line per problem (ruff-like), its details indented below, printed as each "
                   "file is done, then a summary; json: every finding and per-kernel facts (schema in "
                   "kernel_lsp/schemas); sarif: SARIF 2.1.0 for code scanning")
    c.add_argument("--require-reference", action="store_true",
                   help="fail (exit 1) when a kernel is not verified against a reference")
    c.add_argument("--output", "-o", help="write the report to this file instead of stdout")
    c.add_argument("--timeout", type=float, help="seconds per file in the worker (default 60)")
    c.add_argument("--device", choices=DEVICES, help="where kernels run (default auto)")
    c.add_argument("--jobs", "-j", type=int, help="files checked in parallel (default 2)")
    c.add_argument("--no-verify", action="store_true", help="compile only; skip numeric verification")
    c.add_argument("--no-measure", action="store_true", help="do not time kernels against PyTorch on a GPU")
    c.add_argument("--report", metavar="DIR", help="write a roofline chart per measured file and index.html to DIR "
                   "(needs matplotlib)")
    c.add_argument("--gpus", help="the local GPUs to use, one worker each: all (default) or indices such as 0,2")
    c.add_argument("--runner", action="append", help="command that starts `kernel-lsp worker` where a GPU is (again "
                   "for more workers, one per command), split as a shell "
                   "splits words, e.g. 'ssh gpu-box kernel-lsp worker'")
    c.add_argument("--executor", choices=["local", "ray"], help="where files are checked: this machine (default) or a "
                   "Ray cluster (needs kernel-lsp[ray]; docs/scale-out.md)")
    c.add_argument("--ray-address", help="the Ray cluster's head, host:port (implies --executor ray; default: start a "
                   "local cluster)")
    c.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
    c.add_argument("--timings", action="store_true", help="print where each file's time went (worker start, "
                   "each stage, Triton's just-in-time compiles) on stderr")
    c.add_argument("--config", help="pyproject.toml to read [tool.kernel-lsp] from")
    c.set_defaults(func=cmd_check)
    o = sub.add_parser("optimize", help="propose a verified fix or speed-up of one file and print its diff",
                       description="Fix (LLM), optimize (LLM) or tune (a search over launch literals, no LLM) one "
                       "file. Every candidate is verified like user code; only a verified one is accepted, and for "
                       "speed only one faster than the current kernel beyond its 95%% interval. Exit codes: 0 a "
                       "proposal was accepted, 1 none was, 2 usage or configuration error, 130 interrupted.")
    o.add_argument("file")
    o.add_argument("--mode", choices=["fix", "optimize", "tune"], default="fix")
    o.add_argument("--kernel", help="the kernel to work on (default: the file's)")
    o.add_argument("--candidates", type=int, help="candidates per round (default: llm.candidates; tune: 32)")
    o.add_argument("--rounds", type=int, help="rounds (default: llm.rounds; tune: 2)")
    o.add_argument("--apply", action="store_true", help="write an accepted proposal into the file")
    o.add_argument("--reference", help="reference file (KernelBench problem)")
    o.add_argument("--target", help="comma-separated GPU targets (default sm_90)")
    o.add_argument("--device", choices=DEVICES, help="where kernels run (default auto)")
    o.add_argument("--runner", action="append", help="command that starts `kernel-lsp worker` where a GPU is")
    o.add_argument("--timeout", type=float, help="seconds per check of a candidate (default 60)")
    o.add_argument("--config", help="pyproject.toml to read [tool.kernel-lsp] from")
    o.add_argument("--format", choices=["text", "json"], default="text")
    o.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    o.set_defaults(func=cmd_optimize, jobs=None, no_verify=False, no_measure=False, executor=None, ray_address=None)
    t = sub.add_parser("init-tasks", help="copy the bundled tasks (PyTorch references and Triton kernels) into DIR",
                       description="Copy the workspace of tasks that ships with kernel-lsp (tasks/ in a clone) into "
                       "DIR, a new or empty folder, so that `kernel-lsp check DIR` runs the main job from a wheel.")
    t.add_argument("dir", metavar="DIR")
    t.set_defaults(func=cmd_init_tasks)
    w = sub.add_parser("worker", help="serve worker jobs on stdin/stdout (what a runner command starts)")
    w.add_argument("--device", choices=DEVICES, default=os.environ.get("KERNEL_LSP_DEVICE", "auto"))
    w.add_argument("--sandbox", help="the sandbox's options as JSON (the parent passes its settings' options)")
    w.set_defaults(func=cmd_worker)
    s = sub.add_parser("serve", help="run the language server over stdio")
    s.add_argument("--stdio", action="store_true", help="accepted for editor compatibility; stdio is the default")
    s.set_defaults(func=cmd_serve)
    return p


class _Masked:
    """A text stream whose writes have secrets masked (config.mask_secrets): whatever a command prints (findings, a
    configuration error, an endpoint's reply) never shows a key in full."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(mask_secrets(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


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


def main(argv: list[str] | None = None) -> int:
    # `serve` and `worker` speak protocols on stdio; every other command prints for a person, masked.
    if (sys.argv[1:] if argv is None else argv)[:1] in (["serve"], ["worker"]):
        return _main(argv)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Masked(sys.stdout), _Masked(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as e:
        sys.stderr.write(f"kernel-lsp: error: {e}\n")
        return EXIT_USAGE
    except ReportError as e:
        sys.stderr.write(f"kernel-lsp: error: {e}\n")
        return EXIT_USAGE
    except ConfigError as e:
        where = f"{e.path}:{e.line + 1}: " if e.path else ""
        sys.stderr.write(f"kernel-lsp: configuration error: {where}{e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `kernel-lsp check | head`: the reader left. Point stdout at /dev/null so the interpreter's final flush
        # cannot raise again, and exit quietly (the findings that mattered were read).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
