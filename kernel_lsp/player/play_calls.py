"""The call-related requests of a player (`PlayerCalls`, a mixin of play.py's `Player`): `call`, `fetch`,
`perturb`, `stash`, and what a call answers with (its launches, what the guards saw, the line that returned).

A plain module in the player's folder beside play.py (which puts that folder on sys.path first); imports nothing of
kernel_lsp (tests/test_layers.py). Its methods use the state `Player.__init__` sets and `Player.knobs` and
`Player.describe`.
"""

from __future__ import annotations

import contextlib
import os
import sys

import wire

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
HELD_CALLS = 4  # calls made with `hold` whose outputs the player keeps (a caller's window of earlier results)


class PlayerCalls:
    """A player's call of a built model, and the requests around it (see the module docstring)."""

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
            # the very objects the call returned, as a caller that keeps them holds them (the last HELD_CALLS calls)
            self.held = (self.held + [flat])[-HELD_CALLS:]
        if req.get("return_args"):
            answer["args"] = args
        if rec is not None:
            answer.update(self.launch_report(mark, count))
        answer.update(self._call_evidence(req, flat, gpu))
        if req.get("trace_return") and error is None:
            answer["result_line"] = self.returning_line(model, req.get("trace_args") or [])
        return answer

    def op_calls(self, req: dict) -> dict:
        """Several calls, in order, each a `call` request (`calls`); each one's outputs copied as soon as it returns
        and kept, for `fetch` to send by the call's index; stops after the first call that raises. Every call is kept
        alike: nothing here tells the calls the checker will look at from the others."""
        import torch
        answers: list[dict] = []
        self.kept_calls = []
        for sub in req.get("calls") or []:
            if not isinstance(sub, dict):
                break
            answer = self.op_call({**sub, "return_out": False, "hold": False})
            answers.append(answer)
            if answer.get("error") is not None:
                break
            self.kept_calls.append([y.clone() if isinstance(y, torch.Tensor) else y for y in self.kept])
        return {"answers": answers}

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
                        import state
                        state.train_as_built(model, self.as_built.get(id(model)))
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
        """The outputs kept: of the last call (`kept`), of each held call, oldest first (`held`), or of the calls of
        the last `calls` request at the indices asked (`calls`)."""
        if isinstance(req.get("calls"), list):
            kept = self.kept_calls
            return {"outs": [kept[i] if isinstance(i, int) and 0 <= i < len(kept) else [] for i in req["calls"]]}
        if req.get("held"):
            return {"outs": self.held}
        return {"out": self.kept}

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
