"""The player: the process that runs the implementation, and nothing else.

Run as a plain file (`python run.py`) from a folder of its own, beside copies of the other files of this package
(tests/test_layers.py: none of them imports kernel_lsp). It holds Python, torch, triton, the implementation's module
and the inputs of the call it is making: no reference, no truth, no judgement, no secret. The checker (the referee,
in another process) plans every call, sends the inputs, and judges what comes back (docs/architecture.md, "The
player").

The server (`serve`) imports torch (and triton under the CPU interpreter) once, listens on the Unix socket `s` in its
folder, and says so on stdout. A checker connects and sends `{"op": "fork", ...}`: the server forks a player that
keeps the connection, enters its sandbox (a private folder, the environment it was given, Landlock, a subreaper,
its own process group) and answers the checker's requests until the connection ends. The server sends
`{"exited": code}` on the connection when the player ends (the checker then knows how), and kills the player when
the checker's end of the connection closes. When the server's stdin ends (whoever started it is gone) it kills every
player and exits. A checker may also connect with `{"op": "hold"}`: that connection then stops every process of the
server's but itself (`{"op": "stop"}`: the players, what they started, the spares) and lets them go on
(`{"op": "go"}`, or the connection's end; a process another hold still stops stays stopped), so that nothing of
the implementation's runs while the checker times PyTorch's side (checker/measure/sides.py). Only the checker: the
server refuses a connection from a player or its children.

Requests (each answered by one message; `Player` in play.py):
- `load`: import the implementation's file under its own module name, with the launch recorder, the interpreter's
  fixes and bounds guard installed first (under the CPU interpreter);
- `build`: `ModelNew(*init)` right after `torch.manual_seed(seed)` (KernelBench's rule), or the linked function;
- `call`: one call of a built model on the arguments sent, as the checker asks: allocations poisoned with a value,
  GPU guard regions, stores tracked, an operation budget, launches recorded dry; answers with the outputs, the
  arguments as the call left them, the launches, out-of-bounds accesses and which line wrote each output element;
- `compile`: the recorded specializations compiled for the targets named;
- `evidence`: the evidence runs (refilled buffers, launches skipped or watched; see `evidence`);
- `time`: the measure stage's timed calls of a built model (clock.py);
- `trim`: every cached, unused block of GPU memory given back, and how much there was (after every other request but
  `time` the player gives back what it caches unused beyond a GiB);
- `exit`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import isolate  # noqa: E402  (the files beside this one)
import wire  # noqa: E402
from sourcefile import split_lines  # noqa: E402,F401  (the player's rule: tests read it here)
from play import play  # noqa: E402  (the requests a forked player answers)

PR_SET_PDEATHSIG = 1
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"



# The server ----------------------------------------------------------------------------------------------------


def child(conn: socket.socket, request: dict, folder: str, device: str) -> None:
    """In a forked child: enter the sandbox, say ready, and play. Never returns."""
    code = 1
    try:
        os.setsid()
        try:
            import ctypes
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        isolate.redirect_stdio(os.path.join(folder, "stderr"))
        env = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
        work, tmp = os.path.join(folder, "work"), os.path.join(folder, "tmp")
        os.makedirs(work, exist_ok=True)
        os.makedirs(tmp, exist_ok=True)
        env["TMPDIR"] = tmp  # writable, and not the working folder
        os.environ.clear()
        os.environ.update(env)
        os.chdir(work)
        import tempfile
        tempfile.tempdir = tmp
        isolate.become_subreaper()
        lends = None
        if device == "cuda":  # the CUDA driver opens what it needs before the rules close it
            import torch
            torch.cuda.init()
            import triton  # noqa: F401
            if request.get("warm", True):  # a launch of the player's own, so the check's first pays for its kernel only
                import warm
                warm.warm("cuda")
            # Device memory by descriptor (devmem.py), tried once: the checker's CUDA tensors then arrive through
            # its arena, and this player's through its own once the checker has lent one.
            lends = request.get("devmem", True) and wire.devmem.unavailable(torch.cuda.current_device()) is None
        confined = "off"
        if request.get("confine", True):
            confined = isolate.restrict([folder, *request.get("writable", []), *isolate.device_files()],
                                        network=bool(request.get("network", False)))
        wire.send(conn, {"ready": True, "pid": os.getpid(), "confined": confined, "devmem": lends})
        play(conn, device)
        code = 0
    except BaseException:  # noqa: B036
        traceback.print_exc()
    try:
        if isolate.proc_is_ours():  # else /proc would name other processes by this one's children's numbers
            isolate.kill_descendants()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: B036
        pass
    os._exit(code)


def own_namespace() -> str:
    """Become the first process (pid 1) of a pid namespace of its own, with /proc mounted afresh for it: a player then
    sees no process outside it (not the checker, not kernel-lsp's parent, not the editor), so it can read no other
    process's /proc/PID/environ, where an API key would be. The process that called this waits for that first process
    and exits with its status. With a user namespace where this process is not root (its own uid and gid mapped to
    themselves). In the same mount namespace, the folder PLAY_HIDE names (one path, whatever characters it holds) is
    covered by an empty read-only folder: no player can open what is in it, and none can uncover it (Landlock
    forbids a confined process to mount or unmount; one removed outside is made again and covered: `_cover_again`).
    Returns an account of what was done; where the kernel refuses, nothing is, and the account says so."""
    import ctypes
    hide = os.environ.pop("PLAY_HIDE", "")
    visible = f"; {hide} stays visible" if hide else ""
    libc = ctypes.CDLL(None, use_errno=True)
    new_ns, new_pid, new_user = 0x00020000, 0x20000000, 0x10000000
    uid, gid = os.geteuid(), os.getegid()
    # Root needs no user namespace, unless (in a container) it lacks the capability: then one is tried as for others.
    for flags in ([new_ns | new_pid] if uid == 0 else []) + [new_ns | new_pid | new_user]:
        if libc.unshare(flags) == 0:
            break
    else:
        return f"no pid namespace (unshare: errno {ctypes.get_errno()}): other processes stay visible{visible}"
    if flags & new_user:
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError as e:
            return f"no pid namespace (user namespace map: {e}): other processes stay visible{visible}"
    pid = os.fork()
    if pid:  # the caller: outside the namespace, it only waits
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _, status = os.waitpid(pid, 0)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    ms_rec, ms_private, ms_nosuid, ms_nodev, ms_noexec = 1 << 14, 1 << 18, 2, 4, 8
    if libc.mount(b"none", b"/", None, ms_rec | ms_private, None) != 0:
        return (f"a pid namespace, but its mounts are not its own (errno {ctypes.get_errno()}): other processes stay "
                f"visible{visible}")
    covered = ""
    if hide:  # after / is private: the cover stays in this namespace, the folder as it was outside
        errno = _cover(hide)
        covered = f"; {hide} stays visible (mount: errno {errno})" if errno else f"; {hide} hidden"
    if libc.mount(b"proc", b"/proc", b"proc", ms_nosuid | ms_nodev | ms_noexec, None) != 0:
        return (f"a pid namespace, but /proc could not be mounted for it (errno {ctypes.get_errno()}): other processes "
                f"stay visible{covered}")
    return f"a pid namespace of its own: no process outside it is visible{covered}"


def _from_a_player(conn: socket.socket) -> bool:
    """Whether the process at the other end of a connection descends from this server: a player, or a process a
    player started (this server is their subreaper, or the first process of their pid namespace). Landlock does not
    stop a confined process from connecting to this socket, and its requests say whether to confine. Refused too
    when the peer cannot be told."""
    import struct
    try:
        pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
    except OSError:
        return True
    if os.getpid() == 1:  # the first process of a pid namespace: every peer with a pid here is inside it
        return pid != 0  # (a process outside the namespace, the checker, has none)
    for _ in range(4096):  # up the peer's parents: this server among them is a descendant
        if pid == os.getpid():
            return True
        if pid <= 1:
            return False
        try:
            with open(f"/proc/{pid}/status") as f:
                pid = next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
        except (OSError, StopIteration, ValueError, IndexError):
            return True
    return True


def _hold(conn: socket.socket, request: dict, held: list[int], own_proc: bool, others: set[int]) -> bool:
    """One request on a hold connection (`stop` or `go`); False once the connection is done with (its processes
    then go on). `own_proc`: isolate.proc_is_ours(), once for the server; `others`: what the other holds stopped,
    which a `go` here leaves stopped (each hold's stop counts until its own go)."""
    if request.get("op") == "stop" and not own_proc:
        answer = {"unavailable": "this server's /proc is not its own pid namespace's: its processes cannot be told"}
    elif request.get("op") == "stop":
        stopped, running = isolate.stop_tree()
        held[:] = sorted(set(held) | set(stopped))
        answer = {"stopped": len(stopped), "running": len(running)}
    elif request.get("op") == "go":
        _let_go(held, others)
        answer = {"going": True}
    else:
        return False
    try:
        wire.send(conn, answer)
    except (OSError, wire.WireError):
        return False
    return True


def _let_go(held: list[int], others: set[int]) -> None:
    """Let go on what a hold stopped, but what another hold still stops (`others`)."""
    isolate.go_on([p for p in held if p not in others])
    held.clear()


_COVERS: dict[str, int] = {}  # folder -> the device of the empty folder over it; -1 while it is not covered


def _cover(folder: str) -> int:
    """Cover `folder` (made first where it is missing) with an empty read-only tmpfs in this mount namespace; 0, or
    why not as an errno (then `_cover_again` tries again). The folder is opened without following a symlink and the
    cover mounted on what was opened: a symlink put in its place would have moved the cover onto what it names."""
    import ctypes
    _COVERS[folder] = -1
    libc = ctypes.CDLL(None, use_errno=True)
    ms_rdonly, ms_nosuid, ms_nodev, ms_noexec = 1, 2, 4, 8
    fd = -1
    try:
        os.makedirs(os.path.dirname(folder) or ".", exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        if libc.mount(b"none", f"/proc/self/fd/{fd}".encode(), b"tmpfs", ms_rdonly | ms_nosuid | ms_nodev | ms_noexec,
                      b"size=4k,mode=0555") != 0:
            return ctypes.get_errno() or -1
        _COVERS[folder] = os.stat(folder, follow_symlinks=False).st_dev
    except OSError as e:
        return e.errno or -1
    finally:
        if fd >= 0:
            os.close(fd)
    return 0


def _cover_again() -> None:
    """Each turn of the server's loop and before a player starts: a hidden folder removed outside (a user's `rm -rf`
    of kernel-lsp's cache while a server runs) took its cover with it, and the checker makes it again for its next
    lease; the server makes it first and covers it, for the players already running too (they share its mount
    namespace). A cover that could not be mounted is tried again. Left: a lease opened in the turn (50 ms) between the
    folder's return and its cover."""
    for folder, dev in list(_COVERS.items()):
        try:
            if os.stat(folder, follow_symlinks=False).st_dev == dev:
                continue
        except OSError:
            pass
        _cover(folder)


def serve_players() -> int:
    """The fork server: see the module docstring."""
    import select
    import shutil
    import tempfile
    namespace = own_namespace()  # first: a user namespace cannot be entered by a process with threads
    _forget()
    import torch  # noqa: F401
    import clock  # noqa: F401  (takes the clocks as they are, before any checked code can replace them)
    device = "cpu" if INTERPRETED else "cuda"
    if INTERPRETED:  # CPU: import what every call needs before forking; on a GPU nothing that opens CUDA
        import triton  # noqa: F401
        for name in ("capture", "guards", "interpreter", "interpreter_gaps", "compiler"):
            __import__(name)
    _warm_triton()
    isolate.become_subreaper()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(HERE, "s"))
    listener.listen(64)
    isolate.send_line({"type": "ZygoteReady", "pid": os.getpid(), "protocol": int(os.environ.pop("PLAY_PROTOCOL", "0")),
                       "namespace": namespace})
    base = tempfile.mkdtemp(dir=os.environ.get("PLAY_BASE") or None)
    own_proc = isolate.proc_is_ours()  # else no walk of "its" children: they would be other processes
    players: dict[int, tuple[socket.socket, str]] = {}  # pid -> (the checker's connection, the player's folder)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(listener.fileno(), select.POLLIN)
    by_fd: dict[int, int] = {}
    holds: dict[int, tuple[socket.socket, list[int]]] = {}  # fd -> (a checker's hold connection, what it stopped)
    running = True
    while running:
        with contextlib.suppress(Exception):  # (never the loop's end: the players would go with it)
            _cover_again()
        for fd, events in poller.poll(50):
            if fd == 0:
                if not os.read(0, 4096):
                    running = False
            elif fd in holds:
                conn, held = holds[fd]
                try:
                    request = wire.recv(conn) if events & select.POLLIN else {}
                except (OSError, wire.WireError):
                    request = {}
                others = {p for other, (_, theirs) in holds.items() if other != fd for p in theirs}
                if not _hold(conn, request, held, own_proc, others):
                    _let_go(held, others)  # the checker is done with it (or gone): nothing it stopped stays
                    poller.unregister(fd)
                    del holds[fd]
                    conn.close()
            elif fd == listener.fileno():
                conn, _ = listener.accept()
                if _from_a_player(conn):
                    conn.close()  # a player that asked would get one without a sandbox: only the checker may
                    continue
                try:
                    conn.settimeout(10)
                    request = wire.recv(conn)
                    conn.settimeout(None)
                except (OSError, wire.WireError):
                    conn.close()
                    continue
                if request.get("op") == "hold":
                    holds[conn.fileno()] = (conn, [])
                    poller.register(conn.fileno(), select.POLLIN | select.POLLRDHUP | select.POLLHUP)
                    continue
                folder = tempfile.mkdtemp(dir=base)
                with contextlib.suppress(Exception):
                    _cover_again()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in [c for c, _ in players.values()] + [c for c, _ in holds.values()]:
                        other.close()  # the checker's lines to the other players and its holds: none of this one's
                    child(conn, request, folder, device)
                players[pid] = (conn, folder)
                by_fd[conn.fileno()] = pid
                poller.register(conn.fileno(), select.POLLRDHUP | select.POLLHUP)
            elif fd in by_fd and events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(by_fd[fd], signal.SIGKILL)  # the checker is done with it (or gone)
        for pid, code in isolate.reaped():
            if pid in players:
                conn, folder = players.pop(pid)
                with contextlib.suppress(OSError, wire.WireError):
                    conn.setblocking(False)
                    wire.send(conn, {"exited": code, "stderr": _tail(os.path.join(folder, "stderr"))})
                by_fd.pop(conn.fileno(), None)
                with contextlib.suppress(KeyError, ValueError):
                    poller.unregister(conn.fileno())
                conn.close()
                shutil.rmtree(folder, ignore_errors=True)
        orphans = [p for p in isolate.children_of(os.getpid()) if p not in players] if own_proc else []
        if orphans:
            isolate.kill_tree(orphans)
    for conn, held in holds.values():
        isolate.go_on(held)
    for pid, (conn, folder) in players.items():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    if own_proc:
        isolate.kill_descendants()
    shutil.rmtree(base, ignore_errors=True)
    return 0


def _warm_triton() -> None:
    """Before any fork: what each player's first Triton compile would redo and what opens nothing of CUDA: Triton's
    import, its hash of its own files (`triton_key`: 0.7 s on an H100 machine, 0.44 s on this project's CPU machine,
    where the compile for the targets pays it) and the modules its first launch imports. The players inherit them;
    on a GPU, CUDA itself starts in each player (`child`)."""
    try:
        import triton  # noqa: F401
        from triton.runtime.cache import triton_key
        triton_key()
        import triton.experimental.gluon  # noqa: F401
    except Exception:  # noqa: BLE001  (a player's first launch does the same and meets what failed here)
        pass


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            lines = [ln for ln in f.read()[-4000:].decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""
    except OSError:
        return ""


def _forget() -> None:
    """Drop what this interpreter's start-up loaded on behalf of the process that started it: modules, import
    finders and path entries whose names hash to one of PLAY_DROP (sha256 prefixes, so that no name is written here
    or in the environment)."""
    import hashlib
    drop = set(os.environ.pop("PLAY_DROP", "").split(","))
    if not drop - {""}:
        return
    hit = lambda text: hashlib.sha256(str(text).encode()).hexdigest()[:16] in drop  # noqa: E731
    for name in [n for n in sys.modules if hit(n)]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not hit(getattr(type(f), "__module__", ""))
                        and not hit(getattr(f, "__module__", ""))]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not hit(getattr(h, "__module__", ""))]
    sys.path[:] = [p for p in sys.path if not hit(p)]
    sys.path_importer_cache.clear()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = serve_players()
    sys.stdout.flush()
    os._exit(code)  # every player is gone; tearing down torch's modules would only keep the starter waiting
