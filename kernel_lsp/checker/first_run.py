"""The capture on the problem's own inputs (the implementation's first run, in its player) and what its failure
says: the side that failed (the input factory, the reference, the implementation), memory, a GPU the
implementation insists on. Part of the pipeline (pipeline.py), in the checker's process.
"""

from __future__ import annotations

import os
from typing import Any

from ..model import Span
from .compile.positions import api_note, readable
from .player import Player, RemoteError
from .problem.errors import IMPLEMENTATION, INPUTS, DeviceFault, UserCodeError, is_out_of_memory
from .problem.problem import Problem
from .reporter import Reporter

LOAD_SOURCE = "kernel-lsp.load"  # findings about importing and building user code (not the at-once link stage)


def report_capture_error(rep: Reporter, problem: Problem, err: UserCodeError, compile_failed: bool,
                         reference_path: str) -> None:
    """The first run on the problem's own inputs failed: blame the side that did (KL003 for the reference's inputs,
    KL302 for memory, KL105 for the implementation), naming the file and line where it happened."""
    exc = err.exc
    text = readable(str(exc))
    if is_out_of_memory(exc):
        rep.add("KL302", _short(f"out of memory on the problem's own inputs ({type(exc).__name__}: {text})"),
                Span(err.line, 0) if err.line is not None else None, source="kernel-lsp.worker")
        return
    if err.side == INPUTS:
        where = _where(exc, err.path)
        rep.add("KL003", _short(f"the reference's input factory raised {type(exc).__name__}: {text}{where}"),
                None, source=LOAD_SOURCE)
        return
    ref_error = _reference_fails_too(problem)
    if ref_error is not None:
        rep.add("KL003", _short(f"the reference fails on its own inputs too ({type(ref_error).__name__}: "
                                f"{readable(str(ref_error))}{_where(ref_error, reference_path)})"
                                "; fix the reference or its get_inputs()"), None, source=LOAD_SOURCE)
        return
    if _needs_cuda(exc, err) and not torch_has_cuda():
        rep.add("KL106", _short(f"needs CUDA: the implementation only runs on a GPU ({type(exc).__name__}: {text}), "
                                "so nothing was verified here; verify with --device cuda or a runner"),
                Span(err.line, 0) if err.line is not None else None, source="kernel-lsp.verify")
        return
    if not compile_failed:
        rep.add("KL105", _short(f"running the implementation on the problem's inputs raised {type(exc).__name__}: "
                                f"{api_note(text)}"), Span(err.line, 0) if err.line is not None else None,
                source="kernel-lsp.verify")


CUDA_ONLY = ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver", "no CUDA GPUs are available",
             "CUDA is not available", "CUDA driver initialization failed")


def torch_has_cuda() -> bool:
    import torch
    return bool(torch.cuda.is_available())


def _needs_cuda(exc: BaseException, err: UserCodeError) -> bool:
    """The implementation insists on a GPU: torch says CUDA is missing, or an assertion on a line that names
    CUDA (`assert x.is_cuda`) failed."""
    import linecache
    text = f"{exc}"
    if any(s in text for s in CUDA_ONLY):
        return True
    if type(exc).__name__ == "AssertionError" and err.path and err.line is not None:
        line = (exc.info.get("line_text") or "") if isinstance(exc, RemoteError) else \
            linecache.getline(err.path, err.line + 1)
        return "cuda" in line.lower()
    return False


def _where(exc: BaseException, path: str | None) -> str:
    from .problem.errors import deepest_line
    if not path:
        return ""
    line = deepest_line(exc, path)
    return f" (at {os.path.basename(path)}:{line + 1})" if line is not None else f" (in {os.path.basename(path)})"


def _reference_fails_too(problem: Problem) -> BaseException | None:
    """Run the reference on the problem's inputs on the meta device (no memory, no compute): an error there that is
    not a missing meta kernel means the inputs do not suit the reference either."""
    import torch
    if problem.make_reference is None:
        return None
    try:
        with torch.device("meta"):
            inputs = problem.input_factory()
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            with torch.no_grad():
                problem.make_reference(None)(*inputs)
    except (NotImplementedError, MemoryError):
        return None
    except Exception as e:
        if "meta" in str(e).lower():
            return None  # an op without a meta kernel says nothing about the inputs
        return e
    return None


WET_CAPTURE_OPS = 100_000  # under the interpreter, the most operations a capture that raised dry runs with launches


def _capture(problem: Problem, player: Player, seed: int, dry: bool) -> tuple[UserCodeError | None, Any]:
    """Run the implementation once on the problem's own inputs (launches recorded, not run, when `dry`; run after all
    when the dry call raised); returns (error, output), the output None where the second call ran out of budget."""
    try:
        inputs = problem.make_inputs(seed)
    except Exception as e:
        return UserCodeError("the input factory raised", e, getattr(problem.input_module, "__file__", None),
                             INPUTS), None
    recorder = player.recorder
    marks = (len(recorder.launches), recorder.count)
    r = player.call(problem.implementation, inputs, dry=dry)
    if r.error is not None and dry and not r.error.device_fault:
        # A dry launch writes nothing: PyTorch code after it (a factorization, `.item()`, an index read from the
        # kernel's output) ran on memory no kernel wrote, and may raise where the real call does not. The call is
        # made again with its launches run (up to an operation budget), and only its error counts.
        del recorder.launches[marks[0]:]
        recorder.count = marks[1]
        r = player.call(problem.implementation, problem.make_inputs(seed), budget=WET_CAPTURE_OPS)
        if r.stopped:  # too long to run whole at the problem's sizes: the variants judge it at smaller ones
            return None, None
    if r.error is not None:
        if r.error.device_fault:
            raise DeviceFault(r.error)
        return UserCodeError("the implementation raised", r.error, player_file(problem), IMPLEMENTATION), None
    out = r.out or []
    return None, (out[0] if len(out) == 1 else out)


def player_file(problem: Problem) -> str | None:
    return getattr(getattr(problem.implementation, "player", None), "path", None)


def _short(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
