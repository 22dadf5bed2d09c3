"""The player's requests: one player's state (`Player`) and the loop that answers the checker (`play`); the
call-related requests (`call`, `fetch`, `perturb`, `stash`) are `PlayerCalls` in play_calls.py, a mixin of `Player`.

Imported by the player's fork server (main.py, run as `run.py`) from the same folder of copies of player/; imports
nothing of kernel_lsp (tests/test_layers.py). What each request does: main.py's docstring.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import socket
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import devmem  # noqa: E402  (the files beside this one)
import wire  # noqa: E402
from play_calls import PlayerCalls  # noqa: E402
from sourcefile import exec_file  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


# The player ----------------------------------------------------------------------------------------------------


class Player(PlayerCalls):
    """One player's state: its module, the models built from it, and the instruments around its calls."""

    def __init__(self, conn: socket.socket, device: str):
        self.conn, self.device = conn, device
        self.module = None
        self.path = ""
        self.models: dict[str, object] = {}
        # id of a model -> each of its modules' training flag as built (PyTorch builds modules in training mode; the
        # checks run it in eval mode, and the train-mode variant as it was built)
        self.as_built: dict[int, list[bool]] = {}
        self.recorder = None
        self.guard = None
        self.knob_files: list[str] = []  # files whose module-level sizes the checker sets per call
        self.sent_specs: dict = {}  # spec key -> index, as sent to the checker
        self.specs: list = []
        self.sent_kernels: set[str] = set()
        self.sent_launches = 0
        self.jit = [0, 0.0]
        self.launches = None  # evidence.Launches, in a player made for the evidence runs
        self.snapshot = None  # tamper.Snapshot: what the watched functions were before the implementation ran
        self.uninstalled = False  # the launch recorder and bounds guard taken out for the timed calls (op_time)
        self.stashed: dict[str, list] = {}  # argument lists kept across calls (the soak's buffers)
        self.kept: list = []  # the last call's outputs, when the checker did not take them at once
        self.kept_calls: list[list] = []  # copies of each output of the last `calls` request, by call
        self.held: list[list] = []  # the outputs of each call made with `hold` (the last few), as they are now
        self._knobs_seen, self._knobs_found = -1, []

    # load ------------------------------------------------------------------------------------------------------

    def op_load(self, req: dict) -> dict:
        import torch
        torch.set_grad_enabled(False)
        self.path = os.path.realpath(req["path"])
        self.knob_files = [os.path.realpath(p) for p in req.get("knob_files", [])]
        if req.get("mode") == "evidence":
            import evidence
            self.launches = evidence.install()
        else:
            self._instrument()
            self.recorder.user_file = self.path
        import tamper
        self.snapshot = tamper.Snapshot()  # with the instruments in place, before the implementation's code runs
        try:
            self.module = load_module(req["path"], req.get("source"), req.get("module"))
        except BaseException as e:  # noqa: B036  (SystemExit at import is the implementation's failure too)
            return {"error": self.describe(e)}
        return {"ok": True, "guard": bool(self.guard is not None and self.guard.available)}

    def _instrument(self) -> None:
        import capture
        self.recorder = capture.LaunchRecorder()
        self.recorder.install()
        self._jit_clock()
        if INTERPRETED:
            import guards
            import interpreter
            import interpreter_gaps
            self.recorder.interpret_autotune_without_benchmarks()
            interpreter.faithful_scalars()
            interpreter.scoped_helper_calls()
            interpreter_gaps.close_gaps()
            interpreter.count_ops()
            interpreter.watch_dots()
            self.guard = guards.MemoryGuard(user_file=self.path)
            if self.guard.install():
                self.recorder.on_launch.append(self.guard.set_launch)

    def _jit_clock(self) -> None:
        """Count Triton's just-in-time compiles and their seconds (`check --timings`), chaining the user's hooks."""
        try:
            from triton import knobs
            runtime = knobs.runtime
            before, after = runtime.jit_cache_hook, runtime.jit_post_compile_hook
        except (ImportError, AttributeError):
            return
        started: list[float] = []

        def on_start(*args, **kwargs):
            started.append(time.monotonic())
            return before(*args, **kwargs) if before else None

        def on_end(*args, **kwargs):
            if started:
                self.jit[0] += 1
                self.jit[1] += time.monotonic() - started.pop()
            return after(*args, **kwargs) if after else None
        runtime.jit_cache_hook, runtime.jit_post_compile_hook = on_start, on_end

    # build -----------------------------------------------------------------------------------------------------

    def op_build(self, req: dict) -> dict:
        import torch
        if self.module is None:
            return {"error": {"type": "RuntimeError", "text": "nothing loaded"}}
        module = self.module
        if req.get("source") is not None:  # another version of the file (the current text, in a race)
            try:
                module = load_module(self.path, req["source"], f"{module.__name__}_{req['id']}")
            except BaseException as e:  # noqa: B036
                return {"error": self.describe(e)}
        with self.knobs(req.get("knobs")):
            try:
                if req.get("kind") == "kernelbench":
                    torch.manual_seed(int(req.get("seed", 0)))
                    model = getattr(module, req.get("entry") or "ModelNew")(*req.get("init", []))
                    if isinstance(model, torch.nn.Module):
                        import state
                        self.as_built[id(model)] = state.training_modes(model)
                        model = model.eval().to(self.device)
                else:
                    model = getattr(module, req["entry"])
            except BaseException as e:  # noqa: B036
                return {"error": self.describe(e)}
        self.models[req["id"]] = model
        return {"ok": True}

    @contextlib.contextmanager
    def knobs(self, knobs: dict | None):
        """Module-level sizes set on every loaded module of the files the checker named (the input factory's module,
        where the implementation shares its file or imports it), restored afterwards."""
        saved = []
        if knobs:
            for m in self._knob_modules():
                for k, v in knobs.items():
                    if hasattr(m, k):
                        saved.append((m, k, getattr(m, k)))
                        setattr(m, k, v)
        try:
            yield
        finally:
            for m, k, v in reversed(saved):
                setattr(m, k, v)

    def _knob_modules(self) -> list:
        """The loaded modules of the knob files (looked up again only when modules were loaded since: a walk over
        every module's path per call cost tens of milliseconds)."""
        if self._knobs_seen != len(sys.modules):
            self._knobs_seen = len(sys.modules)
            self._knobs_found = [m for m in list(sys.modules.values())
                                 if getattr(m, "__file__", None) and os.path.realpath(m.__file__) in self.knob_files]
        return self._knobs_found

    # compile ---------------------------------------------------------------------------------------------------

    def op_compile(self, req: dict) -> dict:
        import compiler
        results = []
        specs = [self.specs[i] for i in req.get("specs", []) if isinstance(i, int) and 0 <= i < len(self.specs)]
        functions = dict(self.recorder.functions) if self.recorder is not None else {}
        with compiler.compile_mode(list(functions.values())) as to_jit:
            for index, spec in zip(req.get("specs", []), specs):
                fn = functions.get(spec.qualname)
                for target in req.get("targets", []):
                    try:
                        jit = to_jit(fn)
                    except Exception as e:  # the compiler's own decorator refuses it (a **kwargs parameter)
                        r = compiler.CompileResult(target[0], spec, False, error=e)
                    else:
                        r = compiler.compile_spec(jit, spec, target)
                    results.append({"spec": index, "target": r.target, "ok": r.ok, "shared": r.shared,
                                    "registers": r.registers, "local": r.local_bytes, "stack": r.stack_bytes,
                                    "seconds": round(r.seconds, 3),
                                    "error": compiler.error_chain(r.error) if r.error is not None else None})
        return {"results": results}

    # evidence --------------------------------------------------------------------------------------------------

    def op_evidence(self, req: dict) -> dict:
        import evidence
        model = self.models.get(req.get("model"))
        if model is None:
            return {"error": {"type": "RuntimeError", "text": "no such model"}}
        with self.knobs(req.get("knobs")):
            return {"runs": evidence.run(model, req, self.device, self.launches)}

    # time ------------------------------------------------------------------------------------------------------

    def op_time(self, req: dict) -> dict:
        import timed
        # The capture's wrappers and the bounds guard would add their own overhead to every timed launch (and the
        # guard, with no launch recorded to tell it the tensors, would judge the timed calls against stale ones).
        if self.recorder is not None:
            self.recorder.uninstall()
        if self.guard is not None:
            self.guard.uninstall()
        if self.snapshot is not None and not self.uninstalled and (self.recorder is not None or self.guard is not None):
            # What the instruments wrapped (JITFunction.run) is the original again, once: the watched functions as
            # they are now are what later requests are compared with (a KL223 after the timing was the uninstall's).
            # The implementation ran no code in between: the last answer's comparison saw everything before.
            self.snapshot = type(self.snapshot)(self.snapshot.watched, self.snapshot.classes)
        self.uninstalled = True
        return timed.handle(self, req)

    # errors ----------------------------------------------------------------------------------------------------

    def describe(self, e: BaseException) -> dict:
        """An exception as plain data: its type and words, the deepest line of the implementation's file it passed
        through, and what kind of failure it is."""
        text = f"{type(e).__name__}: {e}"
        limit = None
        if INTERPRETED:
            import interpreter_gaps
            limit = interpreter_gaps.interpreter_limit(e)
        line = deepest_line(e, self.path)
        return {"type": type(e).__name__, "text": str(e)[:4000], "line": line,
                "line_text": linecache.getline(self.path, line + 1)[:400] if line is not None else "",
                "frames": user_frames(e, self.path), "limit": limit,
                "device_fault": any(s in text for s in DEVICE_FAULTS),
                "oom": isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
                or "out of memory" in text.lower() or "can't allocate memory" in text}


DEVICE_FAULTS = ("illegal memory access", "AcceleratorError", "unspecified launch failure", "device-side assert",
                 "misaligned address", "illegal instruction", "CUDA error: an illegal")


def deepest_line(exc: BaseException, path: str) -> int | None:
    """0-based line of the deepest traceback frame in `path`, following the cause chain."""
    best, seen = None, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for frame in traceback.extract_tb(exc.__traceback__):
            try:
                if frame.lineno and os.path.realpath(frame.filename) == path:
                    best = frame.lineno - 1
            except (OSError, ValueError):
                continue
        if best is not None:
            break
        exc = exc.__cause__ or exc.__context__
    return best


def user_frames(exc: BaseException, path: str) -> list[int]:
    """The 0-based lines of `path` the exception's traceback passed through, outermost first."""
    try:
        return [f.lineno - 1 for f in traceback.extract_tb(exc.__traceback__)
                if f.lineno and os.path.realpath(f.filename) == path][:20]
    except Exception:
        return []


def load_module(path: str, source: str | None, name: str | None = None):
    """Import a file under its own name (as `import name` would from its folder), or the editor's unsaved text
    instead of the file's bytes (sourcefile.py)."""
    name = name or os.path.splitext(os.path.basename(path))[0]
    while name in sys.modules:
        name += "_"
    return exec_file(path, name, source, os.path.dirname(os.path.abspath(path)))


def op_trim(player: Player, req: dict) -> dict:
    """All cached, unused GPU memory given back; answers how much was held so (what a player keeps between requests,
    as tests/player reads it)."""
    return {"unused": devmem.trim_cache(0)}


def op_echo(player: Player, req: dict) -> dict:
    """The values sent, sent back: the checker's first request where device memory is lent (both directions of the
    wire tried once before any call relies on them)."""
    return {"values": req.get("values")}


OPS = {"echo": op_echo, "load": Player.op_load, "build": Player.op_build, "call": Player.op_call, "calls": Player.op_calls,
       "fetch": Player.op_fetch, "stash": Player.op_stash,
       "perturb": Player.op_perturb,
       "compile": Player.op_compile, "evidence": Player.op_evidence, "time": Player.op_time, "trim": op_trim}


def play(conn: socket.socket, device: str) -> None:
    """Answer the checker's requests until the connection ends or it says exit."""
    player = Player(conn, device)
    while True:
        try:
            req = wire.recv(conn)
        except wire.NoMemory as e:  # the request's inputs did not fit: said as the player's own failure
            wire.send(conn, {"error": {"type": "OutOfMemoryError", "text": f"receiving the request: {e}"[:2000],
                                       "fault": "the request's tensors could not be rebuilt"}})
            continue
        except wire.WireError:
            return
        op = OPS.get(req.get("op"))
        if op is None:
            return
        try:
            answer = op(player, req)
        except Exception as e:  # a fault of the player itself (or of checked code that escaped a call)
            answer = {"error": {"type": type(e).__name__, "text": str(e)[:2000], "fault": traceback.format_exc()[-4000:]}}
        if player.snapshot is not None and req.get("op") != "time":  # (timing uninstalls the launch recorder)
            replaced = player.snapshot.changed()
            if replaced:
                answer["replaced"] = replaced
        if req.get("op") != "time":  # (a timed call must not pay for the allocations a trim would give back)
            devmem.trim_cache()
        try:
            wire.send(conn, answer)
        except wire.WireError as e:  # an answer the wire cannot carry (an output of an unknown type)
            wire.send(conn, {"error": {"type": "WireError", "text": str(e)}})
        except OSError:
            return


