"""The checker's side of the player (player/main.py): every call of the implementation is a request to it.

The player is another process: it holds the implementation's module and the inputs of its calls, and nothing of
this checker (no truth, no reference, no kernel-lsp). What it answers is evidence from the implementation's side,
gathered by code that runs beside it; every judgement happens here. A player that ends (a crash, a `sys.exit`, a
kill) or breaks the wire raises `PlayerLost`, which names how it ended.

- `Player`: typed requests (load, build, call, compile, evidence, time) over the connection run/players.py made;
- `RemoteRecorder`: what the player's launch recorder saw, as the verifier and the compile stage read it (launches
  and their specializations, the kernels' sources, autotuners, the count);
- `Implementation`: a built model in the player, called like the function it stands for (`impl(*inputs)`), its
  failures raised as `RemoteError`s whose class name is the implementation's exception's.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from ..player import wire
from ..player.capture import Spec


class PlayerLost(BaseException):
    """The player's process ended or broke the wire while the checker waited for an answer. A BaseException:
    no `except Exception` on the way (a reference that raises, a probe) may take it for something it can go on after."""

    def __init__(self, message: str, exited: int | None = None, stderr: str = ""):
        super().__init__(message)
        self.exited, self.stderr = exited, stderr


class RemoteError(Exception):
    """The implementation raised in the player. Subclassed per exception name (`remote_error`), so that
    `type(e).__name__` is the implementation's own exception's name."""

    info: dict = {}

    def __init__(self, info: dict):
        super().__init__(info.get("text", ""))
        self.info = info

    @property
    def line(self) -> int | None:
        return self.info.get("line")

    @property
    def limit(self) -> str | None:
        return self.info.get("limit")

    @property
    def device_fault(self) -> bool:
        return bool(self.info.get("device_fault"))

    @property
    def out_of_memory(self) -> bool:
        return bool(self.info.get("oom"))


_ERRORS: dict[str, type] = {}


def remote_error(info: dict) -> RemoteError:
    name = str(info.get("type") or "Exception")
    if not name.isidentifier():
        name = "Exception"
    if name not in _ERRORS:
        _ERRORS[name] = type(name, (RemoteError,), {})
    return _ERRORS[name](info)


@dataclass
class Kernel:
    """A kernel the player launched: its qualified name, function name and source (as the player read it)."""
    qualname: str
    __name__: str
    source: str | None = None


@dataclass
class Launch:
    spec: Spec
    programs: int | None = None
    qualname: str = ""
    line: int | None = None  # the 0-based line of the implementation's file that made it (the player says)


@dataclass
class RemoteRecorder:
    launches: list[Launch] = field(default_factory=list)
    specs: dict[tuple, Spec] = field(default_factory=dict)
    spec_list: list[Spec] = field(default_factory=list)  # by the player's index
    functions: dict[str, Kernel] = field(default_factory=dict)
    autotuners: dict[str, tuple[list[str], int]] = field(default_factory=dict)
    tf32: dict[str, bool | None] = field(default_factory=dict)
    forced: dict[str, int] = field(default_factory=dict)
    count: int = 0
    current: str | None = None
    jit: tuple[int, float] = (0, 0.0)

    def absorb(self, answer: dict, keep_launches: bool = True) -> list[Launch]:
        """Take in a call's launch report; returns the call's launches."""
        for d in answer.get("specs") or []:
            spec = Spec(str(d["qualname"]), str(d["name"]), dict(d["signature"]), dict(d["constexprs"]),
                        {k: v for k, v in dict(d["attrs"]).items()}, int(d["num_warps"]), int(d["num_stages"]),
                        str(d.get("config") or ""))
            self.spec_list.append(spec)
            self.specs.setdefault(spec.key(), spec)
        for qual, info in (answer.get("kernels") or {}).items():
            self.functions[qual] = Kernel(qual, str(info.get("name") or qual), info.get("source"))
        for qual, info in (answer.get("autotuners") or {}).items():
            self.autotuners[qual] = (list(info.get("configs") or []), int(info.get("best") or 0))
        self.tf32.update(answer.get("tf32") or {})
        if answer.get("current"):
            self.current = answer["current"]
        if answer.get("jit"):
            self.jit = (int(answer["jit"][0]), float(answer["jit"][1]))
        made = []
        for l in answer.get("launches") or []:
            index = l.get("spec")
            if isinstance(index, int) and 0 <= index < len(self.spec_list):
                spec = self.spec_list[index]
                line = l.get("line")
                made.append(Launch(spec, l.get("programs"), spec.qualname, line if isinstance(line, int) else None))
        if keep_launches:
            self.launches += made
            self.count += int(answer.get("count") or 0)
        return made

    def index_of(self, spec: Spec) -> int:
        return next(i for i, s in enumerate(self.spec_list) if s.key() == spec.key())


@dataclass
class CallResult:
    """One call of the implementation as the player reported it."""
    out: list | None  # the flattened outputs (None: it raised)
    args: list | None  # the arguments as the call left them
    error: RemoteError | None
    launches: list[Launch]
    count: int
    ops: int
    stopped: bool  # an operation budget stopped it
    oob: list[dict]
    breaches: list[dict]
    writers: list | None  # per output: the line that last stored each element (-1: none), or None
    store_lines: list | None  # per output: the lines that stored into it
    result_line: int | None


class Player:
    def __init__(self, sock: socket.socket, device: str):
        self.sock, self.device = sock, device
        self.recorder = RemoteRecorder()
        self.guarded = False  # the interpreter's bounds guard is installed there
        self.path = ""  # the implementation's file
        self.host_pids = lambda: set()  # the player's processes as this machine numbers them (run/players.py)
        self.tree_pids = lambda: set()  # those and every process under its server (what the implementation started)
        self.holder = None  # () -> run/players.py's Hold on the players' processes, where their server gives one
        self._hold = None
        self._held = False
        self.replaced: list[str] = []  # watched functions the implementation replaced (player/tamper.py)
        self._models = 0

    @property
    def held(self) -> bool:
        return self._held

    def stop(self) -> int:
        """Stop the player's processes (and every other of its server's) until the next request to it: nothing of
        the implementation's runs while this process times a side of its own. Returns how many did not stop (0
        where nothing can stop them: no server to ask)."""
        if self._held:
            return 0
        if self._hold is None:
            if self.holder is None:
                return 0
            try:
                self._hold = self.holder()
            except Exception:  # noqa: BLE001  (no server to ask, or it cannot start: as where there is none)
                self._hold = None
            if self._hold is None:
                self.holder = None
                return 0
        try:
            running = self._hold.stop()
        except (OSError, wire.WireError) as e:
            raise PlayerLost(f"the players' processes could not be stopped: {type(e).__name__}: {e}") from None
        if running is None:  # the server cannot tell its processes: nothing was stopped
            self.holder, hold, self._hold = None, self._hold, None
            hold.close()
            return 0
        self._held = True
        return running

    def go(self) -> None:
        """Let the player's processes run on (before every request: a stopped player would never answer)."""
        if self._held:
            self._held = False
            try:
                self._hold.go()
            except (OSError, wire.WireError) as e:
                raise PlayerLost(f"the players' processes could not be let go on: {type(e).__name__}: {e}") from None

    def request(self, message: dict) -> dict:
        self.go()
        try:
            wire.send(self.sock, message)
            answer = wire.recv(self.sock)
        except wire.NoMemory as e:  # its answer's tensors do not fit here: memory, not a player that ended
            raise PlayerLost(f"the player's answer could not be received: {e}") from None
        except (OSError, wire.WireError) as e:
            raise self._lost(e) from None
        for name in answer.get("replaced") or []:
            if isinstance(name, str) and name not in self.replaced:
                self.replaced.append(name[:200])
        if "exited" in answer and len(answer) <= 2:
            raise PlayerLost(_ended(answer.get("exited")), answer.get("exited"), str(answer.get("stderr") or ""))
        fault = (answer.get("error") or {}).get("fault") if isinstance(answer.get("error"), dict) else None
        if fault:
            raise PlayerLost(f"the player failed: {answer['error'].get('type')}: {answer['error'].get('text')}")
        return answer

    def _lost(self, e: Exception) -> PlayerLost:
        """How the player ended: the server's last word on the connection, if it came."""
        try:
            self.sock.settimeout(5)
            last = wire.recv(self.sock)
            if "exited" in last:
                return PlayerLost(_ended(last.get("exited")), last.get("exited"), str(last.get("stderr") or ""))
        except (OSError, wire.WireError):
            pass
        return PlayerLost(f"the implementation's process broke off ({type(e).__name__}: {e})")

    def load(self, path: str, source: str | None = None, knob_files: list[str] = (), mode: str = "verify") -> None:
        answer = self.request({"op": "load", "path": path, "source": source, "knob_files": list(knob_files),
                               "mode": mode})
        self.path = path
        if answer.get("error"):
            raise remote_error(answer["error"])
        self.guarded = bool(answer.get("guard"))

    def build(self, kind: str, entry: str, seed: int = 0, init: list | None = None, knobs: dict | None = None,
              source: str | None = None) -> "Implementation":
        self._models += 1
        mid = f"m{self._models}"
        answer = self.request({"op": "build", "id": mid, "kind": kind, "entry": entry, "seed": seed,
                               "init": list(init or []), "knobs": knobs or None, "source": source})
        if answer.get("error"):
            raise remote_error(answer["error"])
        return Implementation(self, mid)

    def call(self, impl: "Implementation", args: list, *, seed: int | None = None, poison: float | None = None,
             guard_regions: bool = False, track_stores: bool = False, budget: int | None = None, dry: bool = False,
             knobs: dict | None = None, return_args: bool = False, trace_return: bool = False,
             keep_launches: bool = True, buffers: str | None = None, refill: list | str | None = None,
             copy_of: str | None = None, return_out: bool = True, train: bool = False,
             hold: bool = False, grad: bool = True, refill_via: str = "data") -> CallResult:
        """One call of `impl` on `args`. `copy_of`: fresh copies of a set `stash()` kept instead. `buffers`: the name
        of argument tensors the player keeps across calls (given arguments, they become those; else the kept ones are
        used, refilled first with `refill`, values or a stashed set's name, through `.data` or, `refill_via="numpy"`,
        numpy views of CPU tensors). `return_out=False`: the
        outputs stay in the player until `fetch()` asks for them. `hold`: the player keeps the output objects
        themselves, for `fetch(held=True)` to send as they are after later calls. `grad=False`: the call runs under
        torch.no_grad()."""
        message = {"op": "call", "model": impl.id, "args": list(args), "seed": seed, "poison": poison,
                   "guard_regions": guard_regions, "track_stores": track_stores, "budget": budget, "dry": dry,
                   "forced": dict(self.recorder.forced), "knobs": knobs or None, "return_args": return_args,
                   "trace_return": trace_return, "trace_args": list(args) if trace_return else None,
                   "buffers": buffers, "refill": refill, "copy_of": copy_of, "return_out": return_out, "train": train,
                   "hold": hold, "grad": grad, "refill_via": refill_via}
        return self._call_result(self.request(message), keep_launches)

    def calls(self, impl: "Implementation", calls: list[dict]) -> list[CallResult]:
        """Several calls of `impl` in one exchange, in order, each given as `call`'s keyword arguments (`copy_of`,
        `buffers`, `refill`, `refill_via`, `knobs`); the player keeps a copy of each one's outputs, taken as it
        returned, for `fetch_calls`. The results of the calls made: up to and including the first that raised."""
        forced = dict(self.recorder.forced)
        messages = [{"model": impl.id, "args": [], "forced": forced, "knobs": c.get("knobs") or None,
                     "buffers": c.get("buffers"), "refill": c.get("refill"), "copy_of": c.get("copy_of"),
                     "refill_via": c.get("refill_via", "data")} for c in calls]
        answers = self.request({"op": "calls", "calls": messages}).get("answers") or []
        return [self._call_result(a, True) for a in answers if isinstance(a, dict)]

    def fetch_calls(self, indices: list[int]) -> list[list]:
        """The outputs of the last `calls` exchange's calls at these indices, as each call returned them."""
        outs = self.request({"op": "fetch", "calls": list(indices)}).get("outs") or []
        return [o if isinstance(o, list) else [] for o in outs]

    def _call_result(self, answer: dict, keep_launches: bool) -> CallResult:
        launches = self.recorder.absorb(answer, keep_launches)
        error = remote_error(answer["error"]) if answer.get("error") else None
        return CallResult(answer.get("out") if error is None else None, answer.get("args"), error, launches,
                          int(answer.get("count") or 0), int(answer.get("ops") or 0), bool(answer.get("stopped")),
                          list(answer.get("oob") or []), list(answer.get("breaches") or []), answer.get("writers"),
                          answer.get("store_lines"), answer.get("result_line"))

    def perturb(self, impl: "Implementation", seed: int, names: dict[str, list[int]], mode: str = "scale") -> list[str]:
        """Move the implementation's parameters and buffers of these names and shapes (player/state.py; `mode`
        "pow2": to powers of two); the names moved."""
        return [str(n) for n in self.request({"op": "perturb", "model": impl.id, "seed": seed, "names": names,
                                              "mode": mode}).get("moved") or []]

    def stash(self, sets: dict[str, list]) -> None:
        self.request({"op": "stash", "sets": sets})

    def fetch(self) -> list:
        """The outputs of the last call made with `return_out=False`."""
        return self.request({"op": "fetch"}).get("out") or []

    def fetch_held(self) -> list[list]:
        """The outputs of each call made with `hold` (the player keeps the last few), oldest first, as they are now."""
        outs = self.request({"op": "fetch", "held": True}).get("outs") or []
        return [o if isinstance(o, list) else [] for o in outs]

    def compile(self, specs: list[Spec], targets: list) -> list[dict]:
        """Compile results per (spec, target): the player's plain dicts, `spec` replaced by the Spec itself."""
        indices = [self.recorder.index_of(s) for s in specs]
        answer = self.request({"op": "compile", "specs": indices,
                               "targets": [[t.name, t.backend, t.arch, t.warp_size] for t in targets]})
        out = []
        for r in answer.get("results") or []:
            i = r.get("spec")
            if isinstance(i, int) and 0 <= i < len(self.recorder.spec_list):
                out.append({**r, "spec": self.recorder.spec_list[i]})
        return out

    def evidence(self, impl: "Implementation", sets: dict, refills: list, refill_budget_s: float, seed: int,
                 knobs: dict | None = None) -> dict:
        answer = self.request({"op": "evidence", "model": impl.id, "sets": sets, "refills": refills,
                               "refill_budget_s": refill_budget_s, "seed": seed, "knobs": knobs or None})
        if answer.get("error"):
            raise remote_error(answer["error"])
        return answer.get("runs") or {}

    def trim(self) -> int:
        """Have the player give the GPU back every cached, unused block; the bytes it held so (what a player keeps
        cached between requests, which tests/player reads this way)."""
        return int(self.request({"op": "trim"}).get("unused") or 0)

    def time(self, message: dict) -> dict:
        return self.request({"op": "time", **message})

    def close(self) -> None:
        wire.forget(self.sock)
        for line in (self.sock, self._hold):  # the hold's end lets everything go on
            try:
                if line is not None:
                    line.close()
            except OSError:
                pass


class Implementation:
    """A model (or the linked function) built in the player; calling it makes a plain call there."""

    def __init__(self, player: Player, mid: str):
        self.player, self.id = player, mid

    def __call__(self, *args):
        r = self.player.call(self, list(args))
        if r.error is not None:
            raise r.error
        out = r.out or []
        return out[0] if len(out) == 1 else out


def _ended(code) -> str:
    import signal
    if isinstance(code, int) and code < 0:
        try:
            return f"the process running the implementation was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the process running the implementation was killed by signal {-code}"
    return f"the process running the implementation exited with status {code}"
