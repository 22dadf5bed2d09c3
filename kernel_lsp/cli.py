"""Command line: `kernel-lsp check` (headless, for CI), `optimize`, `serve` (LSP over stdio) and `worker`.

This module is the entry: the parser, `main`, the small commands and `--version`. The `check` command is
cli_check.py; what the commands share (the exit codes, UsageError, the settings the flags make, masked output) is
cli_common.py.

Exit codes, decided in these three modules and only there: 0 when no finding of severity warning or error, 1 when
there is one (or nothing was checked, or with --require-reference a kernel was not verified), 2 for usage or
configuration errors (a path that does not exist, a bad flag, a broken [tool.kernel-lsp], an output path that cannot
be written), 130 when interrupted. An executor lost mid-run (a Ray cluster's head) is no code of its own: every file
it did not finish is a KL303 finding, so the run exits 1 with its whole report written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .cli_check import LOST_GRACE_S, _own_stdout, cmd_check, iter_python_files
from .cli_common import (EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, _check_reference_option,
                         _Masked, _settings_for)
from .config import ConfigError
from .device import DEVICES
from .render.report import ReportError
from .run.executor import executor_for

# Importable here as before: iter_python_files (benchmarks/scale.py), LOST_GRACE_S and _own_stdout (tests).
__all__ = ["EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_INTERRUPTED", "EXIT_USAGE", "LOST_GRACE_S", "UsageError",
           "_own_stdout", "build_parser", "iter_python_files", "main", "version_text"]

DOCS_URL = "https://github.com/kernel-lsp/kernel-lsp/tree/main/docs"


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
    if args.executor == "local" and args.ray_address:
        raise UsageError(f"--ray-address {args.ray_address} with --executor local: the address names a Ray cluster, "
                         "but --executor local checks on this machine; drop one of them")
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
    # Ray prints on stdout (a dead worker's report, its processes' logs): this command's own output keeps stdout.
    out = _own_stdout() if settings.executor == "ray" else sys.stdout
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
        out.write(json.dumps(proposal.to_dict(), indent=2) + "\n")
    else:
        out.write(render_proposal(proposal))
    out.flush()
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
    from .lsp.main import serve_stdio
    serve_stdio()
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
    o.add_argument("--executor", choices=["local", "ray"], help="where the file and each candidate are checked: this "
                   "machine (default) or a Ray cluster (needs kernel-lsp[ray]; docs/scale-out.md)")
    o.add_argument("--ray-address", help="the Ray cluster's head, host:port (implies --executor ray; default: start a "
                   "local cluster)")
    o.add_argument("--timeout", type=float, help="seconds per check of a candidate (default 60)")
    o.add_argument("--config", help="pyproject.toml to read [tool.kernel-lsp] from")
    o.add_argument("--format", choices=["text", "json"], default="text")
    o.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    o.set_defaults(func=cmd_optimize, jobs=None, no_verify=False, no_measure=False)
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
