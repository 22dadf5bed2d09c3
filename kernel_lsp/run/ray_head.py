"""Joining a Ray cluster and watching its head, for the Ray executor (ray_executor.py).

`connect` joins the cluster at an address (or starts a local one), after asking that address for a gRPC handshake
first: `ray.init` has no deadline of its own, so an address where nothing answers, or something other than a Ray
head, is a usage error within seconds (`RayUnavailable`, a ConfigError) rather than a wait of minutes. A Ray Client
address (ray://) is refused up front: it cannot stream a job's events.

`HeadWatch` asks the head (its GCS port) for the same handshake every HEAD_PROBE_S seconds, in a thread of its own
and without any call into Ray; once the head has not answered for HEAD_LOST_S seconds it counts as lost, for good,
and the executor ends every job with KL303 (ray_executor.py says why Ray itself is not asked).

The process outlives its head. Ray ends a process that joined a cluster (status 1) once the head has not answered for
`gcs_rpc_server_reconnect_timeout_s`, 60 s by default, which killed the language server, `optimize` and batch-API
processes a minute after their KL303s; `connect` sets it to a week for this process's own Ray (`_driver_settings`),
unless the environment sets it already. A later executor in that process is refused with one line saying to restart.

Its exit is prompt too. Ray's exit handler (`ray.shutdown`) stays in place (without it Ray's teardown crashed the
process: SIGSEGV, a GCS request still pending), but with the head lost it took 5-15 s: 5 s waiting for the driver's
task events to reach the lost GCS (`task_events_shutdown_flush_timeout_ms`, which `connect` bounds to half a second,
as it bounds the wait above), half a second of a sleep, and for a local cluster this process started, a second per
process given to end gracefully (its raylet waits on the GCS), after which the raylet's agents still ran.
`_leave_lost`, an exit handler that runs before Ray's, shuts Ray down without those two and kills that cluster's
processes and all they started at once (`kill_own_cluster`, which the executor's `close()` calls already).

`import_ray` imports `ray`, and only when a Ray executor is made: kernel-lsp without the `ray` extra works, and
asking for Ray then is a configuration error that says what to install.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..config import ConfigError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0  # seconds for a Ray address to answer at all
HEAD_PROBE_S = 0.5  # seconds between two probes of the cluster's head
HEAD_PROBE_TIMEOUT = 2.0  # seconds one probe waits for the head's answer
HEAD_LOST_S = 3.0  # seconds without an answer from the head after which it counts as lost (Ray's own: 60 s by default)
INSTALL = 'pip install "kernel-lsp[ray]"'
DRIVER_GCS_WAIT = "RAY_gcs_rpc_server_reconnect_timeout_s"  # Ray's setting, read from the environment by ray.init
DRIVER_GCS_WAIT_S = 7 * 24 * 3600  # how long Ray in this process waits for a lost head before ending the process
DRIVER_FLUSH_WAIT = "RAY_task_events_shutdown_flush_timeout_ms"  # Ray's too: its shutdown's wait for the GCS (5000)
DRIVER_FLUSH_WAIT_MS = 500

_lost: str | None = None  # why this process's connection to Ray is lost for good (HeadWatch), once it is


class RayUnavailable(ConfigError):
    """Ray is not installed, or the cluster cannot be reached: a usage error (exit 2), in one line."""


def import_ray():
    global _exit_handler
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f'executor = "ray" needs Ray, which is not installed here: {INSTALL}') from None
    if not _exit_handler:  # registered after Ray's (importing ray registers it), so it runs before Ray's
        atexit.register(_leave_lost)
        _exit_handler = True
    return ray


_exit_handler = False


def _leave_lost() -> None:
    """At interpreter exit, once the head was lost: Ray's own shutdown, less what waits on the lost head there (see
    the module's docstring), then the processes of a local cluster this process started, killed at once. Ray's exit
    handler, which runs next, then finds nothing left to do. Nothing when the head was not lost."""
    if _lost is None:
        return
    import ray
    node = _detach_node()  # ray.shutdown would end each of its processes gracefully, a second each
    try:
        ray.shutdown()  # not from Ray's exit handler: without its half-second sleep
    except Exception as e:
        log.debug("ray.shutdown: %s", e)
    _kill_node(node)


def kill_own_cluster() -> None:
    """Kill the local cluster this process's `ray.init` started, if any: its processes and all they started, at once,
    with no call into Ray that waits on its head, once that head was lost (the raylet's agents outlived Ray's own
    ending of it, and `kernel-lsp check` leaves with os._exit, without exit handlers). The process goes on without
    its raylet: a later `ray.shutdown` still ends."""
    if "ray" in sys.modules:
        _kill_node(_detach_node())


def _detach_node():
    """The local cluster's node this process's `ray.init` started (None when it joined one), taken from Ray, so
    that `ray.shutdown` leaves its processes alone."""
    from ray._private import worker
    node, worker._global_node = worker._global_node, None
    return node


def _kill_node(node) -> None:
    if node is None:
        return
    # The raylet's own children (its Ray workers, with kernel-lsp's processes below them, and its dashboard and
    # runtime-env agents) outlived it when the raylet was killed after its GCS: the whole tree goes at once.
    from ..player.isolate import kill_tree
    try:
        kill_tree([info.process.pid for infos in node.all_processes.values() for info in infos
                   if info.process.poll() is None])
        node.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)  # reaps them
    except Exception as e:
        log.debug("killing the local cluster's processes: %s", e)


def connect(address: str | None, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Join the cluster at `address` ("host:port" of its head, or "auto"), or start a local one when None. Returns
    False when this process was already connected (the caller then leaves it so), unless that connection's head
    was lost (HeadWatch). That, a "ray://" (Ray Client) address, which cannot stream a job's events, and an address
    where no gRPC server answers within `timeout` seconds raise RayUnavailable at once."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None and address.startswith("ray://"):
        raise RayUnavailable(f"ray-address {address}: Ray Client (ray://) cannot stream a job's events back; give the "
                             "head's own address (host:6379, as `ray start --head` prints it) from a machine that can "
                             "reach the cluster's nodes, or run kernel-lsp on the head")
    if address not in (None, "auto"):
        host, port = _host_port(address)
        answer = _http2_answer(host, port, timeout)
        if answer is not None:
            raise RayUnavailable(f"ray-address {address}: {answer}; a Ray head listens on the port `ray start --head` "
                                 "prints (6379 by default): start one there, or leave the address out to start a "
                                 "local one")
        if "RAY_AUTH_MODE" not in os.environ and _token_available():
            # Ray sends its token only to a cluster it found itself; one named by its address needs this, read when
            # Ray is imported.
            os.environ["RAY_AUTH_MODE"] = "token"
    ray = import_ray()
    if ray.is_initialized():
        if _lost is not None:
            raise RayUnavailable(f"{_lost} earlier in this process, and Ray cannot leave a lost cluster to join "
                                 "another in the same process: restart kernel-lsp to use Ray again")
        return False
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:
        options["include_dashboard"] = False
    try:
        with _driver_settings():
            ray.init(address=address, **options)
    except Exception as e:  # Ray raises ConnectionError, RuntimeError or its own errors here
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
        raise RayUnavailable(f"ray-address {address or '(local)'}: could not join {where}: {first}") from None
    return True


@contextmanager
def _driver_settings() -> Iterator[None]:
    """Ray's core worker ends the process that holds it (status 1) once the cluster's head has not answered for
    `gcs_rpc_server_reconnect_timeout_s` (60 s by default): a language server or a batch-API process would die with
    its head. And its shutdown waits `task_events_shutdown_flush_timeout_ms` (5 s by default) for the GCS to take
    the driver's last task events, all of it when the head is lost. Ray reads both from the environment when
    `ray.init` makes this process's core worker, so they are set (to DRIVER_GCS_WAIT_S and DRIVER_FLUSH_WAIT_MS) for
    that call alone, each only when the user did not set it: a value of one's own wins, and so does a cluster's own
    (`ray start --system-config`). Processes that `ray.init` itself starts (a local cluster's) inherit them, as they
    inherit the rest of the environment; none started later does."""
    # Two threads connecting at once: the second must not take the first's values for the user's.
    with _DRIVER_SETTINGS_LOCK:
        ours = {name: str(value) for name, value in ((DRIVER_GCS_WAIT, DRIVER_GCS_WAIT_S),
                                                     (DRIVER_FLUSH_WAIT, DRIVER_FLUSH_WAIT_MS))
                if name not in os.environ}
        os.environ.update(ours)
        try:
            yield
        finally:
            for name in ours:
                os.environ.pop(name, None)


_DRIVER_SETTINGS_LOCK = threading.Lock()


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # and an empty SETTINGS


def _http2_answer(host: str, port: int, timeout: float) -> str | None:
    """None when a gRPC server (a Ray head's GCS speaks gRPC, HTTP/2) answers at host:port within `timeout`
    seconds; else what was there instead, in words. `ray.init` has no deadline of its own: a port that accepts
    connections and never answers (or a web server, such as Ray's dashboard) held it for minutes."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        return f"no Ray cluster answers there ({why} within {timeout:.0f} s)"
    try:
        sock.settimeout(timeout)
        sock.sendall(HTTP2_PREFACE)
        head = b""
        deadline = time.monotonic() + timeout
        while len(head) < 9 and time.monotonic() < deadline:
            chunk = sock.recv(9 - len(head))
            if not chunk:
                break
            head += chunk
    except TimeoutError:
        return f"something accepts connections there but does not answer (nothing within {timeout:.0f} s): no Ray head"
    except OSError as e:
        return f"the connection failed ({e.strerror or e})"
    finally:
        sock.close()
    if len(head) == 9 and head[3] == 4:  # the server's first frame: SETTINGS
        return None
    if not head:
        return "something accepts connections there and closes them: no Ray head"
    if head.startswith(b"HTTP/"):
        return "a web server answers there (Ray's dashboard, 8265 by default?), not a Ray head"
    return "something there answers, but not as a Ray head does"


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return rest, 6379
    return host.strip("[]"), int(port)


def _token_available() -> bool:
    return bool(os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
                or os.path.exists(os.path.expanduser("~/.ray/auth_token")))


class HeadWatch:
    """A thread that probes the Ray cluster's head at `address` (its GCS, "host:port") every HEAD_PROBE_S seconds
    with the gRPC handshake `connect` asks for. `lost` is None until the head has not answered for HEAD_LOST_S
    seconds, then one line saying so, for good (`lost_event` is set then). Makes no call into Ray."""

    def __init__(self, address: str):
        self.address = address
        self.lost: str | None = None
        self.lost_event = threading.Event()
        self._host, self._port = _host_port(address)
        self._silent_since: float | None = None  # when the first of the probes since the last answer began
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kernel-lsp-ray-head", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(HEAD_PROBE_S):
            self._probe()
            if self.lost is not None:
                return

    def _probe(self) -> bool:
        """Probe the head once: True when it answered. It is lost when every probe for HEAD_LOST_S seconds failed
        (at least two: one probe after this thread was kept from running for a while is not enough)."""
        global _lost
        began = time.monotonic()
        answer = _http2_answer(self._host, self._port, HEAD_PROBE_TIMEOUT)
        with self._lock:
            if answer is None:
                self._silent_since = None
                return True
            if self._silent_since is None:
                self._silent_since = began
            silent = time.monotonic() - self._silent_since
            if silent >= HEAD_LOST_S and self.lost is None and not self._stop.is_set():
                self.lost = f"the Ray cluster's head at {self.address} was lost (no answer from it for {silent:.0f} s)"
                log.info("%s: %s", self.lost, answer)  # the findings and the caller say it
                _lost = self.lost  # this process's connection: `connect` refuses from now on
                self.lost_event.set()
        return False

    def went_with(self, cancel: threading.Event) -> str | None:
        """After a job's worker, actor or node was lost: whether the head went too. A head that does not answer now
        is waited on until it answers again or counts as lost; returns `lost`."""
        if self.lost is None and not self._probe():
            deadline = time.monotonic() + HEAD_LOST_S + HEAD_PROBE_TIMEOUT + HEAD_PROBE_S
            while self.lost is None and not cancel.is_set() and time.monotonic() < deadline:
                if self.lost_event.wait(HEAD_PROBE_S) or self._probe():
                    break
        return self.lost

    def stop(self) -> None:
        self._stop.set()
