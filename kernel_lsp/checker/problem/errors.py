"""What went wrong in user code, and whose it was: `UserCodeError` names the side (the implementation, its PyTorch
reference, or the input factory) and the line of its file where it happened; a GPU fault (`DeviceFault`) loses the
CUDA context, so the job stops there instead of blaming whatever ran next. Runs in a worker only.
"""

from __future__ import annotations

import traceback
from pathlib import Path

# Which side of a check a failure belongs to: the code under test, its PyTorch reference, or the input factory.
IMPLEMENTATION, REFERENCE, INPUTS = "implementation", "reference", "inputs"


class UserCodeError(Exception):
    """User code raised. `side` says whose code it was (IMPLEMENTATION, REFERENCE or INPUTS), set where it is
    raised, so callers branch on it and never on the message; `line` is the 0-based line in `path` where it
    happened (the deepest frame there)."""

    def __init__(self, what: str, exc: BaseException, path: str | None, side: str):
        self.exc = exc
        self.path = path
        self.side = side
        self.line = deepest_line(exc, path) if path else None
        super().__init__(f"{what}: {type(exc).__name__}: {exc}")


DEVICE_FAULTS = ("illegal memory access", "AcceleratorError", "unspecified launch failure", "device-side assert",
                 "misaligned address", "illegal instruction", "CUDA error: an illegal")


def is_device_fault(exc: BaseException) -> bool:
    """A GPU fault (an illegal address, a device-side assert): the CUDA context is lost for every later call, so
    the job must stop rather than blame whatever ran next (an input factory, the reference)."""
    from ..player import RemoteError
    if isinstance(exc, RemoteError) and exc.device_fault:
        return True
    text = f"{type(exc).__name__}: {exc}"
    return any(s in text for s in DEVICE_FAULTS)


def is_out_of_memory(exc: BaseException) -> bool:
    """Memory ran out, on the GPU or the host: torch's OutOfMemoryError, a MemoryError, a player's report of either,
    or an error whose text says so (a CUDA library's "CUDA error: out of memory", an mmap's "can't allocate
    memory"). Told by name and text, so callers need not import torch."""
    from ..player import RemoteError
    if isinstance(exc, RemoteError) and exc.out_of_memory:
        return True
    return says_out_of_memory(f"{type(exc).__name__}: {exc}")


def says_out_of_memory(text: str) -> bool:
    """An error's text ("Type: message") says memory ran out: a MemoryError or torch's OutOfMemoryError named in it,
    or the words a CUDA library or an mmap use."""
    return "MemoryError" in text or "out of memory" in text.lower() or "can't allocate memory" in text


def raise_code(error: BaseException | str) -> str:
    """The code for an implementation that raised where it had run before (the evidence runs, the soak): KL302 when
    memory ran out (beside other checks on the GPU, or for the file's own sizes), else KL209."""
    oom = is_out_of_memory(error) if isinstance(error, BaseException) else says_out_of_memory(str(error))
    return "KL302" if oom else "KL209"


class OutOfMemory(Exception):
    """Memory ran out while the implementation ran on a variant's inputs: the job stops with KL302 rather than blame
    the variant (on a GPU shared by several checks, the executor checks the file again alone)."""

    def __init__(self, exc: BaseException, where: str):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc, self.where = exc, where


class DeviceFault(Exception):
    """The GPU faulted while running user code; the job stops here (its CUDA context cannot run anything else)."""

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc


def raise_device_fault(exc: BaseException) -> None:
    """Re-raise a GPU fault as DeviceFault: no later step may blame its symptoms on anything else."""
    if is_device_fault(exc):
        raise DeviceFault(exc) from exc


def is_gpu_out_of_memory(exc: BaseException) -> bool:
    """GPU memory ran out (CUDA's words in the error), as it does beside other checks on a shared GPU; not the
    host's memory."""
    return is_out_of_memory(exc) and "cuda" in f"{type(exc).__name__}: {exc}".lower()


def raise_gpu_trouble(exc: BaseException) -> None:
    """Where a verification step would take an error for the reference's or the input factory's refusal (a skipped
    variant, a truth in the task's dtype): a GPU fault is re-raised as DeviceFault, and GPU memory that ran out is
    re-raised as it is, for the check to stop with KL302 (which the executor checks again alone where other checks
    share the GPU): under memory pressure a variant must not be left out silently, nor judged by a weaker truth."""
    raise_device_fault(exc)
    if is_gpu_out_of_memory(exc):
        raise exc


def deepest_line(exc: BaseException, path: str) -> int | None:
    """0-based line of the deepest traceback frame in `path`, following the cause chain (for the implementation's
    failures in the player, the line the player found in its file)."""
    from ..player import RemoteError
    if isinstance(exc, RemoteError):
        return exc.line
    target = str(Path(path).resolve())
    best = None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for frame in traceback.extract_tb(exc.__traceback__):
            try:
                if str(Path(frame.filename).resolve()) == target and frame.lineno:
                    best = frame.lineno - 1
            except OSError:
                continue
        if best is not None:
            break
        exc = exc.__cause__ or exc.__context__
    return best
