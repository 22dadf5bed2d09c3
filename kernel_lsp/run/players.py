"""The player's fork server, seen from the checker: start it, and fork a player per check (player/main.py).

`PlayerServer` copies the files of player/ into a fresh temporary folder (main.py as `run.py`), and starts `python
run.py` there with a neutral environment: the sandbox's allowlist less every KERNEL_LSP_ variable, and the traces
an editable install of kernel-lsp leaves in a fresh interpreter (its import finder, its source folder) named only by
hashes for the server to drop. Nothing in the player's modules, argv or environment names kernel-lsp.

What a player may write: its own folder, its own compile and CUDA JIT caches (trusted.player_cache_folders) and the
job's `sandbox.writable`, less any entry that would open a folder the checker trusts (trusted.unsafe_writable: the
settings refuse those, and `_fork` leaves out one a job carries anyway). What it may not even open: the GPU leases,
whose folder the server covers in its own mount namespace (`PLAY_HIDE`, player/main.py `own_namespace`).

Who starts one: the warm zygote (zygote.py) for the checks it forks, a long-lived worker (serve.py) for its GPU, and
a cold worker child for itself (`server_for`). Each is started before its starter confines itself, so the players'
confinement is their own, and dies with it (EOF on its stdin).

`PlayerServer.fork(options)` connects to the server's socket, asks for a player and returns the connection once the
player has entered its sandbox: from then on the connection is the checker's line to that player alone
(checker/player.py speaks on it). The player ends when the connection closes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from ..jobs import SandboxOptions
from ..checker.measure import gpu_lease
from ..player import wire
from ..trusted import default_locks_folder, lies_within, player_cache_folders, unsafe_writable
from .sandbox import child_env, single_threaded

log = logging.getLogger(__name__)
PLAYER = Path(__file__).resolve().parent.parent / "player"
READY_TIMEOUT = 120.0
PROTOCOL = 2


class PlayerError(Exception):
    """No player could be started (the server did not start, or refused)."""


def player_files() -> list[tuple[Path, str]]:
    """(source, name in the player's folder) for every file of player/."""
    return [(p, "run.py" if p.name == "main.py" else p.name) for p in sorted(PLAYER.glob("*.py"))
            if p.name != "__init__.py"]


def traces() -> list[str]:
    """Hashes of what an interpreter's start-up loads for kernel-lsp itself: the import finder of an editable
    install, and the folder a source checkout is imported from (player/main.py drops them)."""
    names = [n for n in sys.modules if "kernel_lsp" in n and not n.startswith("kernel_lsp")]
    root = str(PLAYER.parents[1])
    if "site-packages" not in root and "dist-packages" not in root:
        names += [p for p in sys.path if p and os.path.realpath(p) == root]
    return sorted({hashlib.sha256(n.encode()).hexdigest()[:16] for n in names})


def neutral_env(device: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: its starter's (already the sandbox's scrubbed one) less every KERNEL_LSP_ variable,
    with the compile caches pinned."""
    env = child_env(SandboxOptions(enabled=False), base, own=False)
    env["PLAY_DROP"] = ",".join(traces())
    env["PLAY_PROTOCOL"] = str(PROTOCOL)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        single_threaded(env)
    else:
        env.pop("TRITON_INTERPRET", None)
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # torch.cuda.is_available() without opening CUDA before the fork
    return env


class PlayerServer:
    def __init__(self, device: str, base_env: dict[str, str] | None = None, parent: str | None = None):
        self.device = device
        # `parent`: a folder a long-lived worker's parent removes once the worker has ended (a worker that is killed,
        # or confined, cannot remove this server's folder itself). A short name: the socket's path below must fit
        # in a Unix socket address (108 bytes), under a TMPDIR that may be long already.
        if parent is not None:
            self.dir = os.path.join(parent, "p")
            os.mkdir(self.dir, 0o700)
        else:
            self.dir = tempfile.mkdtemp()
        for src, name in player_files():
            shutil.copy(src, os.path.join(self.dir, name))
        self.env = neutral_env(device, base_env)
        # What no player may write, as the starter's environment names it (the neutral one has lost the folders that
        # KERNEL_LSP_ variables pin): the checker's caches and leases, and this server's own files, which later
        # players import.
        self.trusted_env = dict(os.environ if base_env is None else base_env)
        self.trusted = {"the players' server": self.dir, **({"the worker's folder": parent} if parent else {})}
        self._warned: set[str] = set()
        # The GPU leases (and the compile warmer's lock beside them): the server hides their folder from every player
        # (player/main.py), so that none can take a lease's flock, which needs only a descriptor opened for reading.
        hidden = self._hidden(default_locks_folder(self.trusted_env))
        if hidden:
            self.env["PLAY_HIDE"] = hidden
        self.socket_path = os.path.join(self.dir, "s")
        # Players started ahead of need (`after_check` starts them once a check has ended): on a GPU a player's start
        # (its CUDA context, Triton's driver, the first exchange through device arenas) is half a second that a
        # save's verdict would otherwise wait for, twice (the check's player and the evidence runs'). Each is a fresh
        # player in the sandbox of the check that asked last, with nothing loaded; each serves one check.
        self.spares = 2 if device == "cuda" else 0
        self.warm = True  # each player makes a first Triton launch of its own before it is ready (player/warm.py)
        self._spare: list[tuple[SandboxOptions, socket.socket]] = []
        self._spare_lock = threading.Lock()
        self._filling: threading.Thread | None = None
        self._ready = threading.Event()
        self._failed: str | None = None
        self.announced: dict = {}  # the server's ready message (its pid, how it was isolated)
        self.owner = os.getpid()  # a child forked from the owner (a zygote's job) cannot wait for the server
        self.proc = subprocess.Popen([sys.executable, "run.py"], cwd=self.dir, env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=self._read, name="kernel-lsp-players", daemon=True).start()

    def _hidden(self, locks: str) -> str | None:
        """The leases' folder, created, for the server to hide; None where it cannot be (then said in the log): one
        that holds what the server and its players need (a KERNEL_LSP_LOCKS_DIR of /tmp, say) stays visible."""
        needed = [self.dir, self.env.get("TMPDIR") or tempfile.gettempdir(), self.env.get("HOME") or str(Path.home()),
                  sys.prefix, *player_cache_folders(self.env).values()]
        if any(lies_within(os.path.realpath(p), os.path.realpath(locks)) for p in needed):
            log.warning("the GPU leases stay visible to players: their folder %s holds the players' own files", locks)
            return None
        try:
            os.makedirs(locks, exist_ok=True)  # a folder to mount over
        except OSError as e:
            log.warning("the GPU leases stay visible to players: %s", e)
            return None
        return locks

    def _read(self) -> None:
        import json
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("type") == "ZygoteReady":
                self.announced = msg
                if "stay visible" in str(msg.get("namespace")) or "stays visible" in str(msg.get("namespace")):
                    log.info("players' server: %s", msg.get("namespace"))
                if msg.get("protocol") != PROTOCOL:
                    self._failed = f"a player server of another version (protocol {msg.get('protocol')})"
                self._ready.set()
        if not self._ready.is_set():
            self._failed = f"the player server exited before it was ready (status {self.proc.wait()})"
        self._ready.set()

    def alive(self) -> bool:
        if os.getpid() == self.owner:
            return self.proc.poll() is None
        try:  # inherited through a fork: not this process's child, so poll() would take it for gone
            os.kill(self.proc.pid, 0)
            return True
        except PermissionError:  # it exists, outside this process's Landlock domain (signals are scoped)
            return True
        except OSError:
            return False

    def ready(self, timeout: float = READY_TIMEOUT) -> bool:
        if os.getpid() != self.owner:
            # Inherited through a fork (a zygote's job): the reader thread stayed behind. The server listens once it
            # is ready, so its socket's existence says so.
            deadline = time.monotonic() + timeout
            while not os.path.exists(self.socket_path):
                if not self.alive() or time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
            return self._failed is None
        return self._ready.wait(timeout) and self._failed is None and self.proc.poll() is None

    def fork(self, options: SandboxOptions, timeout: float = READY_TIMEOUT) -> socket.socket:
        """A connection to a new player that has entered its sandbox (options: the job's sandbox settings): a spare
        started ahead for the same options when one is ready, else one started now. On a GPU the player's CUDA
        tensors cross through device arenas once a first exchange through them came back exact; where it did not,
        this process's players use host memory from then on."""
        spare = self._take_spare(options)
        return spare if spare is not None else self._start(options, timeout)

    def _start(self, options: SandboxOptions, timeout: float) -> socket.socket:
        global _ARENAS_FAILED
        sock = self._fork(options, timeout, devmem=not _ARENAS_FAILED)
        if wire.lends_device(sock):
            failed = _arenas_fail(sock)
            if failed:
                log.warning("CUDA tensors cross to the player through host memory: %s", failed)
                _ARENAS_FAILED = failed
                sock.close()
                sock = self._fork(options, timeout, devmem=False)
        return sock

    def _take_spare(self, options: SandboxOptions) -> socket.socket | None:
        """A spare player for these options that is still there (one that ended has said so, or closed: its socket
        reads), or None; spares found ended are closed. The others stay for later checks."""
        if os.getpid() != self.owner:
            return None  # a forked child (a zygote's job) shares its parent's spares' sockets: never take them
        with self._spare_lock:
            while True:
                i = next((i for i, (opts, _) in enumerate(self._spare) if opts == options), None)
                if i is None:
                    return None
                sock = self._spare.pop(i)[1]
                if _idle(sock):
                    return sock
                wire.forget(sock)
                sock.close()

    def fill_spares(self, options: SandboxOptions, idle: Callable[[], bool] = lambda: True) -> None:
        """Start players for `options` in a thread until `spares` of them are ready, each only while `idle()` says
        no check is running or waiting (spares for other options are ended: the next check most likely asks as the
        last one did)."""
        if self.spares <= 0 or os.getpid() != self.owner or not self.alive():
            return
        with self._spare_lock:
            if self._filling is not None and self._filling.is_alive():
                return
            for opts, sock in [s for s in self._spare if s[0] != options]:
                wire.forget(sock)
                sock.close()
            self._spare = [s for s in self._spare if s[0] == options]
            self._filling = threading.Thread(target=self._fill, args=(options, idle), name="kernel-lsp-spare-players",
                                             daemon=True)
            self._filling.start()

    def _fill(self, options: SandboxOptions, idle: Callable[[], bool]) -> None:
        while idle():
            with self._spare_lock:
                if sum(o == options for o, _ in self._spare) >= self.spares:
                    return
            try:
                # A player's start is GPU work: never while a side is timed there.
                with gpu_lease.verifying_here(self.device):
                    sock = self._start(options, READY_TIMEOUT)
            except (PlayerError, OSError) as e:
                log.warning("no spare player: %s", e)
                return
            with self._spare_lock:
                self._spare.append((options, sock))

    def wait_for_spares(self, timeout: float) -> bool:
        """Wait until the spares being started are ready (benchmarks and tests); True when none is still starting."""
        filling = self._filling
        if filling is not None:
            filling.join(timeout)
            return not filling.is_alive()
        return True

    def _fork(self, options: SandboxOptions, timeout: float, devmem: bool) -> socket.socket:
        if not self.ready(timeout):
            raise PlayerError(self._failed or "the player server did not start in time")
        caches = player_cache_folders(self.env)  # never the checker's own (trusted.py)
        writable = list(caches.values())
        for folder in writable:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(self.socket_path)
            env = {k: v for k, v in self.env.items() if not k.startswith("PLAY_")}
            env.update(caches)
            wire.send(sock, {"op": "fork", "env": env, "confine": options.enabled, "network": options.network,
                             "writable": writable + self._writable(options), "devmem": devmem, "warm": self.warm})
            reply = wire.recv(sock)
            sock.settimeout(None)
        except (OSError, wire.WireError) as e:
            sock.close()
            raise PlayerError(f"no player: {type(e).__name__}: {e}") from e
        if not reply.get("ready"):
            sock.close()
            raise PlayerError(f"the player did not start: {reply.get('stderr') or reply}")
        if reply.get("devmem") is True:  # it maps device memory: CUDA tensors go to it through an arena
            wire.lend_device(sock)
        return sock

    def own_pids(self) -> list[int]:
        """The server's own processes, as this machine numbers them: the one started and, where it made a pid
        namespace of its own, that namespace's first process (its child, which forks the players), last."""
        from ..player.isolate import children_of
        top = self.proc.pid
        return [top, *children_of(top)] if self.announced.get("pid") == 1 else [top]

    def hold(self) -> "Hold":
        """A line to the server that stops every player of its (and all they started) while the checker times its
        own sides, and lets them go on (player/main.py, `hold`)."""
        if not self.ready(READY_TIMEOUT):
            raise PlayerError(self._failed or "the player server did not start in time")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(30)
            sock.connect(self.socket_path)
            wire.send(sock, {"op": "hold"})
        except OSError as e:
            sock.close()
            raise PlayerError(f"no hold on the players: {type(e).__name__}: {e}") from e
        return Hold(sock)

    def _writable(self, options: SandboxOptions) -> list[str]:
        """The job's `sandbox.writable` less what would let a player write where the checker trusts what it reads
        (the settings refuse those; a job built otherwise may still carry one)."""
        unsafe = unsafe_writable(options.writable, self.trusted_env, self.trusted)
        for entry, why in unsafe.items():
            if entry not in self._warned:
                self._warned.add(entry)
                log.warning("sandbox.writable: %s left out of the players' sandbox: it %s", entry, why)
        return [w for w in options.writable if w not in unsafe]

    def close(self) -> None:
        with self._spare_lock:
            spare, self._spare, self.spares = self._spare, [], 0
        for _, sock in spare:
            wire.forget(sock)
            sock.close()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Hold:
    """`stop()`: every process of the players' server but the server itself stopped (SIGSTOP, sent by the server:
    a confined checker may not signal outside its own Landlock domain); returns how many still ran after a second
    (a thread inside the kernel that did not come back). `go()`: they run on. Closing the line, or this process's
    end, lets them go on too."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def stop(self) -> int | None:
        """How many did not stop; None where the server cannot tell its processes (player/isolate.py `proc_is_ours`)."""
        answer = wire.request(self.sock, {"op": "stop"})
        return None if answer.get("unavailable") else int(answer.get("running") or 0)

    def go(self) -> None:
        wire.request(self.sock, {"op": "go"})

    def close(self) -> None:
        self.sock.close()


_SERVER: PlayerServer | None = None
_ARENAS_FAILED: str | None = None  # why device arenas did not carry a first exchange (then never tried again here)


def _arenas_fail(sock: socket.socket) -> str | None:
    """Why a first exchange through device arenas did not come back exact (None: it did): a small CUDA tensor and a
    view of it, to the player and back."""
    import torch
    try:
        x = torch.arange(1, 1001, dtype=torch.float32, device="cuda")
        sock.settimeout(60)
        back = wire.request(sock, {"op": "echo", "values": [x, x[::7]]}).get("values")
        sock.settimeout(None)
        ok = (isinstance(back, list) and len(back) == 2 and all(isinstance(t, torch.Tensor) for t in back)
              and back[0].device.type == "cuda" and torch.equal(back[0], x) and torch.equal(back[1], x[::7]))
        return None if ok else f"the player's echo differs ({type(back).__name__})"
    except (OSError, wire.WireError, RuntimeError) as e:
        return f"{type(e).__name__}: {e}"


def _idle(sock: socket.socket) -> bool:
    """A spare player's connection is as it was left: nothing to read (a player that ended would have said so, or
    its end closed the connection)."""
    import select
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def after_check(options: SandboxOptions, idle: Callable[[], bool] = lambda: True) -> None:
    """A check with these sandbox options has ended in this process and none is waiting: start the spare players
    the next check will take (`PlayerServer.spares` of them; none on the CPU, where a player's fork is cheap), each
    while `idle()`."""
    if _SERVER is not None:
        _SERVER.fill_spares(options, idle)


def install(server: PlayerServer) -> None:
    """The server this process (and the children it forks) asks for players."""
    global _SERVER
    _SERVER = server


def installed() -> PlayerServer | None:
    return _SERVER


def prestart(requested: str) -> None:
    """A cold worker's server, started before the worker confines itself (a confined process can no longer give the
    server a /proc of its own: Landlock forbids the mount). Nothing when one is installed already (the zygote's).
    The worker closes it with `close_owned` before it kills what its job left running: confined, it may no longer
    signal the server, which is outside its Landlock domain."""
    if _SERVER is not None:
        return
    install(PlayerServer(likely_device(requested), dict(os.environ)))


def likely_device(requested: str) -> str:
    """The device a worker will choose, told without importing torch (the driver's files), so that the players'
    server can start first: "cpu" when asked for or when no GPU is present, else "cuda"."""
    from ..device import gpu_present
    return "cpu" if requested == "cpu" or not gpu_present() else "cuda"


def close_owned() -> None:
    """Close the server this process started itself (a cold worker's), if any."""
    global _SERVER
    if _SERVER is not None and _SERVER.owner == os.getpid():
        server, _SERVER = _SERVER, None
        server.close()


class connector:
    """`connect(device)` for a check (checker/pipeline.py): a connection to a fresh player in the job's sandbox, from
    the server this process inherited (the zygote's, the long-lived worker's), else from one started for this
    process alone (closed by `close_owned`). `host_pids()`: the server's processes and its players, as this machine's
    process table numbers them (the measure stage does not take them for another process on the GPU)."""

    def __init__(self, options: SandboxOptions):
        self.options = options

    def __call__(self, device: str) -> socket.socket:
        global _SERVER
        if _SERVER is None or _SERVER.device != device or not _SERVER.alive():
            _SERVER = PlayerServer(device)
        return _SERVER.fork(self.options)

    def host_pids(self) -> set[int]:
        """The server and its players, not what a player started (`tree_pids` has those too): the implementation's
        own process times its side, a process it started that uses the GPU meanwhile is its work outside its calls."""
        if _SERVER is None:
            return set()
        from ..player.isolate import children_of
        servers = _SERVER.own_pids()
        return {*servers, *children_of(servers[-1])}

    def tree_pids(self) -> set[int]:
        """The server and every process under it, as this machine's process table numbers them."""
        if _SERVER is None:
            return set()
        from ..player.isolate import descendants
        return {_SERVER.proc.pid, *descendants(_SERVER.proc.pid)}

    def hold(self) -> "Hold | None":
        return _SERVER.hold() if _SERVER is not None else None
