"""Confinement of a process that runs code under test: a scrubbed environment, Landlock rules, and a subreaper.

Standard library only, and no import of the package around it: the neutral harness (harness.py) runs this file as a
plain module next to itself, where nothing may name the tool that started it.

- `scrub_env`: the environment a confined process gets: an allowlist of variables (toolchain, locale, paths,
  CUDA/Triton/PyTorch settings), never anything else (API keys, tokens, credentials).
- `restrict`: Landlock (Linux 5.13+): writes only below the given folders; no TCP bind or connect (ABI 4+); no
  signals to processes outside the domain, so confined code cannot kill the process that reaps it (ABI 6+). Reads
  stay allowed (Python, torch and the code's own files are everywhere). Irreversible for this process and every
  process it starts. Where the kernel lacks Landlock, says so and confines nothing.
- `become_subreaper` / `kill_descendants`: orphans of the process tree (a `setsid` child whose parent exited)
  re-parent to the subreaper instead of init, so every process the code started can be found and killed.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import time
from typing import Callable

# Variables a confined process may see: what Python, torch, Triton, CUDA and the C toolchain read. Nothing else
# passes (keys, tokens, cloud credentials, editor sockets).
ALLOWED_NAMES = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "PWD",
    "PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONWARNINGS",
    "PYTHONIOENCODING", "PYTHONUTF8", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CC", "CXX", "XDG_CACHE_HOME",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
}
ALLOWED_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "NCCL_", "HIP_",
                    "ROCM_", "HSA_", "MKL_", "KMP_")
# A prefix that looks like a setting but holds a secret is still refused.
SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)


def scrub_env(env: dict[str, str], extra: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """The allowlisted part of `env`, plus the names in `extra` (a user's own additions)."""
    out = {}
    for name, value in env.items():
        allowed = name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)
        if (allowed and not SECRET.search(name)) or name in extra:
            out[name] = value
    return out


def without_secrets(env: dict[str, str], drop: tuple[str, ...] | list[str] = (),
                    keep: tuple[str, ...] = ("SSH_AUTH_SOCK", "SSH_AGENT_PID")) -> dict[str, str]:
    """`env` less every variable named like a secret and those in `drop`: for a command that is not sandboxed
    itself but starts one that is (a runner's ssh needs the user's agent and configuration, not their API keys)."""
    return {k: v for k, v in env.items() if k in keep or (not SECRET.search(k) and k not in drop)}


# Landlock ------------------------------------------------------------------------------------------------------

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on x86_64 and aarch64
_PATH_BENEATH, _NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 38, 36
# The write rights, as bit numbers, by the first Landlock ABI that has them: WRITE_FILE, REMOVE_DIR, REMOVE_FILE,
# MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM (1); REFER (2); TRUNCATE (3).
_FS_WRITE_BY_ABI = {1: (1, 4, 5, 6, 7, 8, 9, 10, 11, 12), 2: (13,), 3: (14,)}
_FS_WRITE = {1 << bit: abi for abi, bits in _FS_WRITE_BY_ABI.items() for bit in bits}  # access right -> its first ABI
_FILE_WRITE = (1 << 1) | (1 << 14)  # the rights a rule on a single file may grant: WRITE_FILE, TRUNCATE
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPE_SIGNAL = 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, too old, or disabled)."""
    try:
        version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def device_files() -> list[str]:
    """The device files a process may write: the null devices and a GPU's (NVIDIA's, AMD's, DRM's), never /dev as
    a whole (/dev/shm would keep a file across checks)."""
    import glob
    names = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/nvidiactl", "/dev/nvidia-uvm",
             "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/kfd"]
    names += glob.glob("/dev/nvidia[0-9]*") + glob.glob("/dev/dri/*") + glob.glob("/dev/nvidia-caps/*")
    return [n for n in names if os.path.exists(n)]


def restrict(writable: list[str], network: bool = False) -> str:
    """Confine this process (and what it starts) for good: writes only below `writable` (folders, or single files
    such as device files), and, unless `network`, no TCP. Returns a one-line account of what is enforced ("landlock
    ABI 7: ...", or why nothing is)."""
    abi = landlock_abi()
    if abi < 1:
        return "no Landlock on this kernel: writes, network and signals are not confined"
    libc = _libc()
    fs = 0
    for right, since in _FS_WRITE.items():
        if abi >= since:
            fs |= right
    attr = _RulesetAttr(fs, _NET_TCP if abi >= 4 and not network else 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"Landlock refused a ruleset (errno {ctypes.get_errno()}): nothing is confined"
    allowed = []
    try:
        for folder in writable:
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist cannot be written either
            try:
                rule = _PathBeneath(fs if os.path.isdir(folder) else fs & _FILE_WRITE, fd)
                if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) == 0:
                    allowed.append(folder)
            finally:
                os.close(fd)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"Landlock could not confine this process (errno {ctypes.get_errno()}): nothing is confined"
    finally:
        os.close(ruleset)
    parts = [f"writes only in {len(allowed)} folders and files"]
    parts.append("no TCP" if abi >= 4 and not network else "TCP allowed" if not network else "network allowed")
    parts.append("no signals outside" if abi >= 6 else "signals not scoped (Landlock ABI < 6)")
    return f"landlock ABI {abi}: " + ", ".join(parts)


# Processes --------------------------------------------------------------------------------------------------


def become_subreaper() -> bool:
    """Orphaned descendants re-parent to this process instead of init."""
    try:
        return _libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _tasks(pid: int) -> list[str]:
    """The thread ids of `pid` in /proc (none once it is gone)."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def children_of(pid: int) -> list[int]:
    """The children of `pid` (every thread's), from /proc: its `children` files, or, where the kernel has none (gVisor,
    a kernel without CONFIG_PROC_CHILDREN), every process's parent in /proc/PID/stat."""
    out = []
    for tid in _tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            return _children_by_scan(pid)
        except (OSError, ValueError):
            continue
    return out


def _children_by_scan(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(name))
    return out


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, parents before children."""
    out, frontier = [], [pid]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children_of(p):
                if c not in out:
                    out.append(c)
                    nxt.append(c)
        frontier = nxt
    return out


def kill_tree(pids: list[int]) -> int:
    """SIGKILL these processes and all their descendants, each stopped first so that none forks a replacement while
    the others die. Returns how many were signalled."""
    victims = []
    for p in pids:
        for q in [p] + descendants(p):
            if q not in victims:
                victims.append(q)
    for q in victims:
        try:
            os.kill(q, signal.SIGSTOP)
        except OSError:
            pass
    killed = 0
    for q in victims:
        try:
            os.kill(q, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


PF_EXITING = 0x4  # a task's flags (/proc/PID/task/TID/stat, field 9): on its way out, it stops no more


def _stopped(pid: int) -> bool:
    """Whether every thread of `pid` is stopped (or exiting, or the process is gone or a zombie)."""
    for tid in _tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in "TtZX" and not int(fields[6]) & PF_EXITING:
            return False
    return True


MAX_HELD = 1024  # more processes than this below: not stopped one by one (each stop walks them all)


def stop_tree(wait_s: float = 1.0) -> tuple[list[int], list[int]]:
    """SIGSTOP every process below this one (a players' server's: its players, their children wherever they moved
    their session, the spares) and wait up to `wait_s` until every thread of each is stopped (one inside a driver
    call stops when the call returns); then walk the tree again, until a walk finds no process that is not stopped:
    a process may have been let go on by one not yet stopped, and forked, before that one stopped. Once every process
    of the tree is stopped at once, none can fork or signal. Returns (the processes stopped, those still running:
    every one when there are more than MAX_HELD)."""
    stopped: list[int] = []
    deadline = time.monotonic() + wait_s
    while True:
        tree = descendants(os.getpid())
        if len(tree) > MAX_HELD or time.monotonic() > deadline:
            return stopped, [p for p in tree if p not in stopped or not _stopped(p)]
        new = [p for p in tree if p not in stopped]
        running = [p for p in tree if p in stopped and not _stopped(p)]
        if not new and not running:
            return stopped, []
        for p in new + running:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        stopped += new
        while True:
            running = [p for p in stopped if not _stopped(p)]
            if not running:
                break
            if time.monotonic() > deadline:
                return stopped, running
            time.sleep(0.0002)


def go_on(stopped: list[int]) -> None:
    """SIGCONT each of these (gone ones passed over)."""
    for p in stopped:
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            pass


def proc_is_ours() -> bool:
    """Whether /proc numbers processes as this process's pid namespace does: where a players' server became the first
    process of a namespace but could not mount /proc for it (a server started by a confined process, which may not
    mount), /proc is the outer one, and a walk of "pid 1's" children there would find other processes than its own."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def kill_descendants(keep: set[int] | frozenset[int] = frozenset(), timeout: float = 5.0) -> int:
    """Kill every descendant of this process except those in `keep` (and theirs), and reap the ones that are this
    process's own children; repeated until none is left (a subreaper finds orphans among its children). Returns how
    many were killed."""
    me = os.getpid()
    killed = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kept = set(keep)
        for k in keep:
            kept.update(descendants(k))
        mine = [p for p in children_of(me) if p not in kept]
        if not mine:
            break
        killed += kill_tree(mine)
        for p in mine:
            try:
                os.waitpid(p, 0)
            except ChildProcessError:
                pass
    return killed


# A fork server ----------------------------------------------------------------------------------------------


def reaped() -> list[tuple[int, int]]:
    """(pid, status) of every child that has ended, without waiting: its exit code, or minus the signal that killed
    it."""
    out = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        out.append((pid, -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)))
    return out


def redirect_stdio(path: str) -> None:
    """Standard input from /dev/null, standard output and error appended to `path` (a forked child's own file)."""
    err = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(err, 1)
    os.dup2(err, 2)
    os.close(err)
    os.close(null)


def send_line(message: dict) -> None:
    """One JSON line on fd 1, written whole."""
    import json
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


def fork_server(ready: dict, child: "Callable[[dict], None]", keep: frozenset[int] = frozenset()) -> int:
    """Serve fork requests on stdin until EOF: announce `ready`, then for each line `{"type": "ForkJob", "id", ...}`
    fork and run `child(request)` in the child (it must not return), answering `{"type": "Forked", "id", "pid"}`
    and, when it ends, `{"type": "Exited", "id", "returncode"}` (negative: the signal). The server is a subreaper:
    every child of it that is not a request's process (nor in `keep`: a helper server it started itself) is an orphan
    of one, killed at once. On EOF (the parent is gone) every child and descendant is killed."""
    import json
    import select
    become_subreaper()
    me = os.getpid()
    children: dict[int, object] = {}  # pid -> request id
    send_line(ready)
    buf = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.05)
        if readable:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    request = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if not isinstance(request, dict) or request.get("type") != "ForkJob":
                    continue
                pid = os.fork()
                if pid == 0:
                    child(request)
                    os._exit(1)
                children[pid] = request.get("id")
                send_line({"type": "Forked", "id": request.get("id"), "pid": pid})
        for pid, code in reaped():
            if pid in children:
                send_line({"type": "Exited", "id": children.pop(pid), "returncode": code})
        orphans = [p for p in children_of(me) if p not in children and p not in keep]
        if orphans:
            kill_tree(orphans)  # reaped by the loop above
    for pid in children:  # the parent is gone: no orphans
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    kill_descendants()
    return 0
