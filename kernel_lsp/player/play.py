"""The player's requests: one player's state (`Player`) and the loop that answers the checker (`play`).

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
import wire  # noqa: E402  (the files beside this one)
from sourcefile import exec_file  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


# The player ----------------------------------------------------------------------------------------------------


class Player:
    """One player's state: its module, the models built from it, and the instruments around its calls."""

    def __init__(self, conn: socket.socket, device: str):
        self.conn, self.device = conn, device
        self.module = None
        self.path = ""
        self.models: dict[str, object] = {}
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
        self.stashed: dict[str, list] = {}  # argument lists kept across calls (the soak's buffers)
        self.kept: list = []  # the last call's outputs, when the checker did not take them at once
        self.held: list = []  # the outputs of a call made with `hold`, as they are now
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

    # call ------------------------------------------------------------------------------------------------------

    def op_call(self, req: dict) -> dict:
        """One call of a built model on the arguments sent, with the instruments the checker asks for; answers with
        what the call returned or raised and what the instruments saw."""
        import guards
        model = self.models.get(req.get("model"))
        if model is None:
            return {"error": {"type": "RuntimeError", "text": "no such model"}}
        args = self._call_args(req)
        rec, guard = self.recorder, self.guard
        gpu = guards.GuardRegions() if req.get("guard_regions") and self.device == "cuda" else None
        if gpu is not None:
            args = [gpu.wrap(x, f"input {i}") for i, x in enumerate(args)]
        if rec is not None:
            rec.forced = {k: int(v) for k, v in (req.get("forced") or {}).items()}
            rec.dry = bool(req.get("dry"))
            mark, count = len(rec.launches), rec.count
        if guard is not None:
            guard.stores.clear()
            guard.track_stores = bool(req.get("track_stores")) and guard.available
        ops0 = self._ops()
        try:
            out, error, stopped = self._run_call(req, model, args, gpu)
        finally:
            if guard is not None:
                guard.track_stores = False
            if rec is not None:
                rec.dry = False
        answer: dict = {"error": error, "stopped": stopped, "ops": self._ops() - ops0, "jit": list(self.jit)}
        flat = wire.flatten(out) if error is None else []
        if error is None and req.get("return_out", True):
            answer["out"] = flat
        elif error is None:
            self.kept = flat  # sent only if the checker asks (`fetch`), after the call has returned
        if error is None and req.get("hold"):
            self.held = flat  # the very objects the call returned, as a caller that keeps them holds them
        if req.get("return_args"):
            answer["args"] = args
        if rec is not None:
            answer.update(self.launch_report(mark, count))
        answer.update(self._call_evidence(req, flat, gpu))
        if req.get("trace_return") and error is None:
            answer["result_line"] = self.returning_line(model, req.get("trace_args") or [])
        return answer

    def _call_args(self, req: dict) -> list:
        """The call's arguments: those sent, fresh copies of a stashed set (`copy_of`), or the stashed tensors of
        `buffers` (stashed on the first call that sends them), refilled in place when `refill` asks."""
        import torch
        args = list(req.get("args") or [])
        if req.get("copy_of") in self.stashed:  # fresh tensors holding a stashed set's values
            args = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.stashed[req["copy_of"]]]
        stash = req.get("buffers")
        if stash is not None:  # the same tensors across calls: stashed once, then refilled in place
            if args:
                self.stashed[stash] = args
            args = self.stashed.get(stash, [])
            refill = req.get("refill")
            if isinstance(refill, str):
                refill = self.stashed.get(refill)
            if refill is not None:
                # Through `.data`, or a numpy view of a CPU tensor (`refill_via`): the tensors' version counters do
                # not move, as when a kernel writes them.
                numpy = req.get("refill_via") == "numpy"
                with torch.no_grad():
                    for x, value in zip(args, refill):
                        if isinstance(x, torch.Tensor) and isinstance(value, torch.Tensor) and x.shape == value.shape:
                            if numpy and x.device.type == "cpu" and x.dtype != torch.bfloat16:
                                x.detach().numpy()[...] = value.detach().cpu().numpy()
                            else:
                                x.data.copy_(value)
        return args

    def _run_call(self, req: dict, model, args: list, gpu) -> tuple:
        """Call the model on `args` under the request's knobs, operation budget, poisoned allocations, seed, training
        mode and grad mode. Returns its output, the error it raised (described) or None, and whether the budget was
        spent."""
        import guards
        import torch
        budget = req.get("budget")
        poison = req.get("poison")
        out, error, stopped = None, None, False
        with self.knobs(req.get("knobs")), self._budget(budget) as spent:
            try:
                with (guards.poisoned_allocations(float(poison), gpu) if poison is not None
                      else contextlib.nullcontext()):
                    if req.get("seed") is not None:
                        torch.manual_seed(int(req["seed"]))
                    training = bool(req.get("train")) and isinstance(model, torch.nn.Module)
                    if training:
                        model.train()
                    try:
                        with torch.set_grad_enabled(req.get("grad", True) is not False):
                            out = model(*args)
                    finally:
                        if training:
                            model.eval()
                if self.device == "cuda":
                    torch.cuda.synchronize()
            except BaseException as e:  # noqa: B036  (sys.exit in the call, a budget's stop: reported, not obeyed)
                error = self.describe(e)
                if type(e).__name__ == "OpBudgetExceeded":
                    error["budget_raised"] = not spent()
            stopped = spent()
        return out, error, stopped

    def _call_evidence(self, req: dict, flat: list, gpu) -> dict:
        """What the memory guard and the GPU guard regions saw during the call (then cleared): out-of-bounds
        accesses, with `track_stores` which line wrote each element of the outputs `flat`, and guard bytes
        breached."""
        import torch
        answer: dict = {}
        guard = self.guard
        if guard is not None:
            answer["oob"] = [{"line": ev.line, "kind": ev.kind, "kernel": ev.kernel, "count": ev.count,
                              "detail": ev.detail} for ev in guard.events.values()]
            guard.events.clear()
            if req.get("track_stores") and guard.stores:
                answer["writers"] = [writers_of(y, guard.stores) for y in flat]
                answer["store_lines"] = [guard.store_lines_into(*extent(y)) if isinstance(y, torch.Tensor) else []
                                         for y in flat]
        if gpu is not None:
            answer["breaches"] = [b.__dict__ for b in gpu.breaches()]
            gpu.clear()
        return answer

    @contextlib.contextmanager
    def _budget(self, n):
        if n is None or not INTERPRETED:
            yield lambda: False
            return
        import interpreter
        with interpreter.op_budget(int(n)) as spent:
            yield spent

    def _ops(self) -> int:
        if not INTERPRETED:
            return 0
        import interpreter
        return interpreter.ops()

    def launch_report(self, mark: int, count: int) -> dict:
        """The launches since `mark` (their specs by index into the specs sent so far), new specs, and the kernels
        and autotuners seen."""
        import capture
        rec = self.recorder
        new_specs = []
        for key, spec in rec.specs.items():
            if key not in self.sent_specs:
                self.sent_specs[key] = len(self.specs)
                self.specs.append(spec)
                new_specs.append(spec_dict(spec))
        launches = [{"spec": self.sent_specs.get(l.spec.key()), "programs": l.programs, "line": l.line}
                    for l in rec.launches[mark:]]
        kernels = {}
        for qual, fn in rec.functions.items():
            if qual not in self.sent_kernels:
                self.sent_kernels.add(qual)
                kernels[qual] = {"name": getattr(fn, "__name__", qual), "source": source_of(fn)}
        tf32 = {}
        if INTERPRETED:
            import interpreter
            tf32 = {qual: interpreter.ran_tf32_dot(fn) for qual, fn in rec.functions.items()}
        tuners = {qual: {"configs": [capture.describe_config(c) for c in configs], "best": best}
                  for qual, (configs, best) in rec.autotuners.items()}
        return {"launches": launches, "count": rec.count - count, "specs": new_specs, "kernels": kernels,
                "tf32": tf32, "autotuners": tuners, "current": rec.current}

    def returning_line(self, model, args: list) -> int | None:
        """The 0-based line of the implementation's file where its outermost frame returned, found by running it once
        more under a trace (asked only when it launched nothing, so the run is cheap)."""
        import torch
        entry, found, names = [], [], {}
        target = self.path

        def local(frame, event, arg):
            if event == "return" and frame is entry[0]:
                found.append(frame.f_lineno - 1)
            return local

        def call(frame, event, arg):
            name = frame.f_code.co_filename
            if name not in names:
                names[name] = os.path.realpath(name) == target
            if names[name] and not entry:
                entry.append(frame)
                return local
            return None
        old = sys.gettrace()
        sys.settrace(call)
        try:
            with torch.no_grad():
                model(*args)
        except Exception:
            pass
        finally:
            sys.settrace(old)
        return found[0] if found else None

    def op_fetch(self, req: dict) -> dict:
        return {"out": self.held if req.get("held") else self.kept}

    def op_perturb(self, req: dict) -> dict:
        """Move a built model's float parameters and buffers off their initial values, the same way the checker
        moves the reference's (`perturb`, from the same seed and names): defaults such as a norm's weight of ones and
        bias of zeros hide a kernel that ignores them. Answers the names moved."""
        import torch
        model = self.models.get(req.get("model"))
        if not isinstance(model, torch.nn.Module):
            return {"moved": []}
        import state
        return {"moved": state.perturb(model, int(req.get("seed", 0)), dict(req.get("names") or {}),
                                       "pow2" if req.get("mode") == "pow2" else "scale")}

    def op_stash(self, req: dict) -> dict:
        """Keep argument lists under names, for later calls to copy or refill from, on the player's device (the
        wire brings tensors as the checker made them: on the CPU)."""
        import torch
        for name, args in (req.get("sets") or {}).items():
            self.stashed[str(name)] = [x.to(self.device, copy=True) if isinstance(x, torch.Tensor) else x
                                       for x in args]
        return {"ok": True}

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


def spec_dict(spec) -> dict:
    return {"qualname": spec.qualname, "name": spec.name, "signature": _plain(spec.signature),
            "constexprs": {k: _plain(v) for k, v in spec.constexprs.items()}, "attrs": _plain(spec.attrs),
            "num_warps": spec.num_warps, "num_stages": spec.num_stages, "config": spec.config}


def _plain(v):
    """A value as the wire carries it: primitives, tuples, lists and dicts of them; anything else by its repr."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return repr(v)


def source_of(fn) -> str | None:
    import inspect
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return None


def extent(t) -> tuple[int, int]:
    lo = t.data_ptr()
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n > 0) if t.numel() else 0
    return lo, lo + span * t.element_size()


def writers_of(y, stores: list):
    """Per element of `y`, the 0-based line of the last tracked store that wrote it (-1: none), as an int32 tensor of
    y's shape; None for what is not a tensor."""
    import numpy as np
    import torch
    if not isinstance(y, torch.Tensor) or y.device.type != "cpu" or y.numel() == 0:
        return None
    offsets = torch.zeros((), dtype=torch.int64)
    for n, st in zip(y.shape, y.stride()):
        offsets = offsets.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st
    addrs = (y.data_ptr() + offsets.reshape(-1) * y.element_size()).numpy().astype(np.uint64)
    order = np.argsort(addrs, kind="stable")
    ordered = addrs[order]
    lines = np.full(addrs.shape, -1, dtype=np.int32)
    for line, stored in stores:
        if line is None:
            continue
        a = np.asarray(stored).astype(np.uint64).reshape(-1)
        at = np.searchsorted(ordered, a)
        ok = at < ordered.size
        hit = at[ok][ordered[at[ok]] == a[ok]]
        lines[order[hit]] = line
    return torch.from_numpy(lines).reshape(tuple(y.shape))


def load_module(path: str, source: str | None, name: str | None = None):
    """Import a file under its own name (as `import name` would from its folder), or the editor's unsaved text
    instead of the file's bytes (sourcefile.py)."""
    name = name or os.path.splitext(os.path.basename(path))[0]
    while name in sys.modules:
        name += "_"
    return exec_file(path, name, source, os.path.dirname(os.path.abspath(path)))


def op_echo(player: Player, req: dict) -> dict:
    """The values sent, sent back: the checker's first request where device memory is lent (both directions of the
    wire tried once before any call relies on them)."""
    return {"values": req.get("values")}


OPS = {"echo": op_echo, "load": Player.op_load, "build": Player.op_build, "call": Player.op_call, "fetch": Player.op_fetch, "stash": Player.op_stash,
       "perturb": Player.op_perturb,
       "compile": Player.op_compile, "evidence": Player.op_evidence, "time": Player.op_time}


def play(conn: socket.socket, device: str) -> None:
    """Answer the checker's requests until the connection ends or it says exit."""
    player = Player(conn, device)
    while True:
        try:
            req = wire.recv(conn)
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
        try:
            wire.send(conn, answer)
        except wire.WireError as e:  # an answer the wire cannot carry (an output of an unknown type)
            wire.send(conn, {"error": {"type": "WireError", "text": str(e)}})
        except OSError:
            return


