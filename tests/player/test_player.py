"""The player: the process that runs the implementation holds nothing of the checker, sees no process outside its own
pid namespace (so no ancestor's environment, where an API key would be), and what it sends back is decoded without
trusting it. Tried from a kernel file (tests/fixtures/player/spy.py), through the real CLI, on the warm and the cold
paths."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import FIXTURES, ROOT, check_json, run_cli

SECRET = "sk-spy-secret"  # the value spy.py looks for in every /proc/PID/environ it can read


def _spy(warm: bool, monkeypatch) -> dict:
    """Check spy.py from this process (the parent, holding the key in its environment) through a local executor: on
    the warm path once its zygote is ready, else in a fresh worker process."""
    import time

    from kernel_lsp.check import CheckRequest, check_file
    from kernel_lsp.config import Settings
    from kernel_lsp.run.executor import LocalExecutor
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with LocalExecutor(1, warm=warm) as executor:
        if warm:
            executor.warm_up()
            deadline = time.monotonic() + 120
            while not executor.pool.ready():
                assert time.monotonic() < deadline, "the warm worker never became ready"
                time.sleep(0.05)
        # The CPU interpreter's path (the zygote forks interpreter jobs only); the GPU's is the CLI test below.
        report = check_file(CheckRequest(FIXTURES / "player" / "spy.py", Settings(device="cpu", timeout=120), ROOT,
                                         executor=executor))
    assert report.stats["warm_workers"] == int(warm)
    assert SECRET not in json.dumps(report.to_dict())  # nothing of the key in the report either
    (finding,) = [f for f in report.findings if f.code == "KL105"]
    text = finding.message
    return _spied(text)


def _spied(text: str) -> dict:
    return json.loads(text[text.index("SPY") + 3: text.index("YPS")])


def _holds_nothing(seen: dict) -> None:
    assert seen["modules"] == [] and seen["env_names"] == [] and seen["frame_files"] == []
    assert "kernel" not in seen["argv"] and "kernel" not in seen["cmdline"]
    assert seen["float64"] == 0 and not seen["tmpdir_is_cwd"]
    assert seen["secret_seen"] == [] and not seen["key_in_env"]
    assert max(seen["pids"]) < 50, seen["pids"]  # its own namespace: the server, itself, nothing else


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_player_holds_nothing_of_the_checker_and_sees_no_secret(warm, monkeypatch):
    """The issue's mechanisms, from a kernel file: no kernel-lsp module, argument, variable or frame; no float64
    tensor (no truth); TMPDIR is not the working folder; and only the player's own pid namespace in /proc, so the
    parent's key, though in the parent's own environment, is in no /proc/PID/environ the player can read."""
    _holds_nothing(_spy(warm, monkeypatch))


@pytest.mark.gpu
def test_player_on_a_gpu_holds_nothing_of_the_checker_and_sees_no_secret():
    """The same from `kernel-lsp check --device cuda` (its long-lived GPU worker, the player beside it), the key in
    the CLI's own environment."""
    proc = run_cli("check", str(FIXTURES / "player" / "spy.py"), "--device", "cuda", "--no-cache", "--format",
                   "json", env={"OPENAI_API_KEY": SECRET}, timeout=300)
    assert SECRET not in proc.stdout + proc.stderr
    (finding,) = [f for f in json.loads(proc.stdout)["files"][0]["findings"] if f["code"] == "KL105"]
    _holds_nothing(_spied(finding["message"]))


def test_player_a_secret_the_reference_raises_is_redacted(tmp_path):
    """The reference runs in the checker, which can still see its ancestors: a reference that raises the parent's key
    is reported with the key masked (check.py redacts every secret of its own environment)."""
    (tmp_path / "k.py").write_text((FIXTURES / "player" / "spy.py").read_text().replace(
        "def ref(x):\n    return torch.relu(x)",
        "def ref(x):\n    import os\n    for p in sorted(os.listdir('/proc')):\n"
        "        data = _environ_of(p) if p.isdigit() else b''\n"
        "        if b'sk-spy' in data:\n"
        "            raise RuntimeError(data[data.index(b'sk-spy'):][:40].decode())\n"
        "    raise RuntimeError('not found')"))
    proc = run_cli("check", str(tmp_path / "k.py"), "--no-cache", "--format", "json", env={"OPENAI_API_KEY": SECRET},
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert SECRET not in proc.stdout and "[redacted]" in proc.stdout, proc.stdout[-2000:]


def _received(doc: dict, fds: list[int]):
    """What the wire makes of a message written by hand, with these descriptors."""
    from kernel_lsp.player import wire
    a, b = socket.socketpair()
    try:
        payload = json.dumps(doc).encode()
        socket.send_fds(a, [struct.pack("!II", len(payload), len(fds))], fds)
        a.sendall(payload)
        return wire.recv(b)
    finally:
        a.close()
        b.close()


def test_player_wire_refuses_what_it_cannot_check():
    """What the player sends is decoded without pickle: an unknown value kind, an unknown dtype, a view past its
    storage, a storage past its memory, a storage in an arena the message does not name, an arena that was never lent
    or whose descriptor is not device memory are each a WireError, never an object built from the bytes."""
    from kernel_lsp.player import wire

    def sent(doc: dict, memory: bytes = b""):
        if not memory:
            return _received(doc, [])
        fd = os.memfd_create("m")
        try:
            os.write(fd, memory)
            return _received({**doc, "f": 0}, [fd])
        finally:
            os.close(fd)
    assert sent({"m": {"__dict__": [["x", 1]]}, "t": []}) == {"x": 1}
    tensor = {"s": 0, "dtype": "float32", "shape": [4], "stride": [1], "offset": 0, "device": "cpu"}
    assert sent({"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 16]]}, bytes(16))["t"].shape == (4,)
    bad = [({"m": {"__pickle__": "gASV"}, "t": []}, b""),
           ({"m": {"__dict__": [["t", {"__tensor__": {**tensor, "dtype": "object"}}]]}, "t": [[0, 16]]}, bytes(16)),
           ({"m": {"__dict__": [["t", {"__tensor__": {**tensor, "shape": [5]}}]]}, "t": [[0, 16]]}, bytes(16)),
           ({"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 64]]}, bytes(16)),
           ({"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 16, 1]]}, bytes(16)),  # in no arena
           ({"m": None, "t": [], "d": [{"id": 1, "device": 0, "size": 1 << 21}]}, b""),  # an arena never lent
           ({"m": None, "t": [], "d": [{"id": 1, "device": 0, "size": 1 << 21, "fd": 0}]}, bytes(16))]
    for doc, memory in bad:
        with pytest.raises(wire.WireError):
            sent(doc, memory)


def test_player_wire_keeps_strides_and_aliasing():
    from kernel_lsp.player import wire
    a, b = socket.socketpair()
    x = torch.randn(6, 8)
    wire.send(a, {"args": [x, x[:, ::2], x.t()]})
    got = wire.recv(b)["args"]
    assert torch.equal(got[0], x) and got[1].stride() == (8, 2) and got[2].stride() == (1, 8)
    got[0][0, 0] = 123.0
    assert got[1][0, 0] == 123.0 and x[0, 0] != 123.0  # one storage there, not this process's memory


def test_player_splits_lines_as_the_checker_does():
    """A U+2028 or a form feed in a comment must not move lines in one view of the file only: the player's linecache
    and every view in kernel-lsp split as Python's tokenizer does."""
    sys.path.insert(0, str(ROOT / "kernel_lsp" / "player"))
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("player_main_for_test", ROOT / "kernel_lsp" / "player" / "main.py")
        main = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(main)
    finally:
        sys.path.remove(str(ROOT / "kernel_lsp" / "player"))
    from kernel_lsp.model import split_lines
    text = "a = 1  # x\u2028y\x0cz\x1c\r\nb = 2\rc = 3\n\nd"
    assert main.split_lines(text) == split_lines(text, keepends=True)
    assert split_lines(text) == ["a = 1  # x\u2028y\x0cz\x1c", "b = 2", "c = 3", "", "d"]


def test_player_a_line_separator_in_a_comment_is_reported_on_the_right_line(tmp_path):
    """With U+2028 in a comment above the kernel, findings still land on the lines the file holds (Python's lines, not
    str.splitlines')."""
    source = (ROOT / "tests" / "corpus" / "bug_add_no_mask.py").read_text()
    marked = source.replace("import torch\n", "import torch  # a\u2028comment\x0cwith separators\n", 1)
    (tmp_path / "k.py").write_text(marked)
    # On the CPU: the interpreter places KL208 on the load or store itself (a GPU run places it at the launch).
    _, doc = check_json(tmp_path / "k.py", extra=("--no-cache", "--device", "cpu"))
    lines = marked.split("\n")
    for f in doc["files"][0]["findings"]:
        if f["code"] == "KL208":
            assert "tl.load" in lines[f["range"]["line"]] or "tl.store" in lines[f["range"]["line"]], f


@pytest.mark.gpu
def test_player_cuda_tensors_cross_by_device_memory_both_ways():
    """On a GPU a player says it maps device memory; a CUDA tensor then crosses to it through the checker's arena and
    back through the player's (no host copy), with its values, strides and aliasing, as on the memfd path."""
    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.player import wire
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer("cuda")
    try:
        sock = server.fork(SandboxOptions())
        assert wire.lends_device(sock)
        player = Player(sock, "cuda")
        player.load(str(FIXTURES / "player" / "echo.py"))
        impl = player.build("function", "echo")
        x = torch.randn(1000, 300, device="cuda")
        for shape in [(1000, 300), (5 << 20,)]:  # the second outgrows the first arenas: new ones are lent
            x = torch.randn(*shape, device="cuda")
            views = [x, x.t()] if x.dim() == 2 else [x, x[::3]]
            out = impl(*views)
            assert torch.equal(out[0], views[0]) and torch.equal(out[1], views[1])
            assert out[0].device.type == "cuda" and abs(float(out[2]) - float(sum(v.double().sum() for v in views))) < 1e-3
        conn = wire._CONNS[sock]
        assert conn.lent and conn.mapped  # both sides lent an arena, and this one mapped the player's
        player.close()
        assert sock not in wire._CONNS
    finally:
        server.close()


@pytest.mark.gpu
def test_player_wire_refuses_an_arena_it_cannot_map_whole():
    """An arena entry claiming more bytes than the allocation its descriptor lends, or a storage past the arena's end,
    is a WireError on the receiving side (nothing is read past the allocation)."""
    from kernel_lsp.player import devmem, wire
    arena = devmem.Arena(0, 1)

    def sent(doc: dict):
        return _received(doc, [arena.fd])
    try:
        tensor = {"s": 0, "dtype": "float32", "shape": [4], "stride": [1], "offset": 0, "device": "cuda"}
        ok = {"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 16, 1]],
              "d": [{"id": 1, "device": 0, "size": arena.size, "fd": 0}]}
        assert sent(ok)["t"].shape == (4,)
        with pytest.raises(wire.WireError):
            sent({**ok, "d": [{**ok["d"][0], "size": arena.size * 2}]})
        with pytest.raises(wire.WireError):
            sent({**ok, "t": [[arena.size - 8, 16, 1]]})
    finally:
        arena.close()


def test_player_spares_serve_one_check_each_and_only_for_their_sandbox():
    """Players started ahead of need (`after_check`): a check with the same sandbox options takes a ready one (no
    start on its path), each spare serves one check, a check with other options starts its own, and a spare that
    ended meanwhile is passed over for a fresh player."""
    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.player import wire
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer("cpu")
    assert server.spares == 0  # on the CPU a player's fork is cheap: none by default
    server.spares = 2
    options = SandboxOptions()
    try:
        server.fill_spares(options)
        assert server.wait_for_spares(120)
        spares = [sock for _, sock in server._spare]
        assert len(spares) == 2
        taken = server.fork(options)
        assert taken in spares and len(server._spare) == 1
        other = server.fork(SandboxOptions(network=True))  # other options: a player of its own
        assert other not in spares and len(server._spare) == 1
        for sock in (taken, other):
            player = Player(sock, "cpu")
            player.load(str(FIXTURES / "player" / "echo.py"))
            out = player.build("function", "echo")(torch.ones(3))
            assert torch.equal(out[0], torch.ones(3))
            player.close()
        last = server._spare[0][1]
        pid = wire.request(last, {"op": "echo", "values": [os.getpid()]})  # it answers: a live player
        assert pid == {"values": [os.getpid()]}
        last.shutdown(socket.SHUT_RDWR)  # as if it had ended: its connection reads
        fresh = server.fork(options)
        assert fresh is not last and server._spare == []
        Player(fresh, "cpu").close()
        server.fill_spares(options)
        assert server.wait_for_spares(120) and len(server._spare) == 2
    finally:
        server.close()
    assert server._spare == []


def test_player_cannot_reach_the_gpu_leases_nor_write_the_checker_caches(tmp_path, caplog):
    """A player could flock a GPU lease (a descriptor opened for reading is enough) and keep every other check's timing
    waiting: its server hides the leases' folder, so the player lists it empty and cannot open a lease, while this
    process (the checker) takes the lease at once. Its CUDA driver's JIT cache is one of its own, not the checker's
    ~/.nv, and a `sandbox.writable` entry that lies in the checker's caches is left out of its sandbox."""
    from kernel_lsp.checker.measure import gpu_lease
    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.player import isolate
    from kernel_lsp.run.players import PlayerServer
    # (a ':' in the leases' folder, as a path may hold: the server is told one folder, not a list split on ':')
    locks, home, triton_cache, data = (tmp_path / n for n in ("lo:cks", "home", "triton", "data"))
    for folder in (locks, home / ".nv" / "ComputeCache", triton_cache / "sub", data):
        folder.mkdir(parents=True)
    lease = locks / "GPU-test.lock"
    lease.write_text("")
    server = PlayerServer("cpu", {**os.environ, "KERNEL_LSP_LOCKS_DIR": str(locks), "HOME": str(home),
                                  "TRITON_CACHE_DIR": str(triton_cache)})
    try:
        options = SandboxOptions(writable=[str(triton_cache / "sub"), str(data)])
        with caplog.at_level("WARNING", logger="kernel_lsp.run.players"):
            player = Player(server.fork(options), "cpu")
        left_out = f"{triton_cache / 'sub'} left out of the players' sandbox: it lies in Triton's compile cache"
        assert left_out in caplog.text
        if server.announced["namespace"].startswith("no pid namespace"):  # the kernel refused: nothing to hide with
            pytest.skip(f"no namespaces here: {server.announced['namespace']}")
        assert f"{locks} hidden" in server.announced["namespace"], server.announced
        player.load(str(FIXTURES / "player" / "reach.py"))
        seen = player.build("function", "leases")(str(locks), str(lease))
        assert seen == {"hide_variable": False, "cuda_cache": str(home / ".nv" / "kernel-lsp-players"),
                        "listed": [], "flock": "FileNotFoundError"}, seen
        with gpu_lease.lease("GPU-test", "timing", folder=str(locks), timeout=5, quiet_timeout=5) as waited:
            assert waited < 1
        if isolate.landlock_abi() >= 1:
            nv = [str(home / ".nv"), str(home / ".nv" / "ComputeCache")]
            written = player.build("function", "write")([*nv, str(triton_cache / "sub"), str(data)])
            assert written == {**{f: "PermissionError" for f in nv}, str(triton_cache / "sub"): "PermissionError",
                               str(data): "written"}, written
        player.close()
    finally:
        server.close()


def test_player_cannot_reach_a_leases_folder_removed_and_made_again_while_its_server_ran(tmp_path):
    """The cover over the leases' folder goes with the folder it covers. After a `rm -rf` of it and a lease written
    in a new one (a user clearing kernel-lsp's cache while a server runs, then a check), a player that was already
    running soon lists it empty and one started later never sees the lease. A symlink in the folder's place gets no
    cover (it would land on what the link names); once a folder is back, the server covers it."""
    import shutil
    import time

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    locks, elsewhere = tmp_path / "locks", tmp_path / "elsewhere"
    locks.mkdir()
    elsewhere.mkdir()
    lease = locks / "GPU-test.lock"
    server = PlayerServer("cpu", {**os.environ, "KERNEL_LSP_LOCKS_DIR": str(locks)})

    def started():
        player = Player(server.fork(SandboxOptions()), "cpu")
        player.load(str(FIXTURES / "player" / "reach.py"))
        return player, player.build("function", "leases")

    def covered_for(look):
        deadline = time.monotonic() + 30
        while look(str(locks), str(lease))["listed"] != []:
            assert time.monotonic() < deadline, "a running player still sees the folder made again"
    try:
        running, look = started()
        if f"{locks} hidden" not in server.announced["namespace"]:
            pytest.skip(f"nothing hidden here: {server.announced['namespace']}")
        shutil.rmtree(locks)
        locks.mkdir(exist_ok=True)  # (the server may have made it again first)
        lease.write_text("")
        covered_for(look)
        later, look_later = started()
        seen = look_later(str(locks), str(lease))
        assert (seen["listed"], seen["flock"]) == ([], "FileNotFoundError"), seen
        later.close()
        while True:  # a symlink where the folder was (the server, making the folder again, may come first)
            shutil.rmtree(locks, ignore_errors=True)
            with contextlib.suppress(FileExistsError):
                locks.symlink_to(elsewhere)
                break
        (elsewhere / "mark").write_text("")
        started()[0].close()  # a player started with the symlink there: the server tried, and did not cover it
        assert look(str(locks), str(lease))["listed"] == ["mark"]  # the link's target is not covered
        locks.unlink()
        locks.mkdir(exist_ok=True)
        lease.write_text("")
        covered_for(look)
        running.close()
    finally:
        server.close()


def test_player_batched_calls_keep_each_output_as_it_returned_and_the_soak_judges_them():
    """The soak on a GPU sends its calls a batch at a time (`calls`): the player keeps a copy of each call's outputs
    as the call returned it (a buffer returned again by the next call does not change it), stops at the first call
    that raises, and the soak still finds what goes wrong after 100 calls and passes what is right on every call."""
    import random

    from kernel_lsp.checker.player import Player
    from kernel_lsp.checker.verify.evidence.soak import soak
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    sets = {n: [torch.randn(64, generator=torch.Generator().manual_seed(i))] for i, n in enumerate("ABD")}
    plan = {"sets": sets, "knobs": {}, "signs": False,
            "truth": {n: ([v[0].double() * 2], [v[0] * 2]) for n, v in sets.items()}}
    server = PlayerServer("cpu")
    try:
        player = Player(server.fork(SandboxOptions()), "cpu")
        player.load(str(FIXTURES / "player" / "many_calls.py"))
        same = player.build("function", "same_buffer")
        player.stash({f"set:{n}": v for n, v in sets.items()})
        results = player.calls(same, [{"copy_of": "set:A"}, {"copy_of": "set:B"}])
        assert [r.error for r in results] == [None, None]
        first, second = player.fetch_calls([0, 1])
        assert torch.equal(first[0], sets["A"][0] * 2) and torch.equal(second[0], sets["B"][0] * 2)
        raising = player.build("function", "raises_on_the_fifth")
        results = player.calls(raising, [{"copy_of": "set:A"}] * 8)
        assert len(results) == 5 and results[-1].error is not None and "fifth" in str(results[-1].error)
        for entry, expected in (("right", []), ("wrong_after_100", ["KL206"]), ("same_buffer", [])):
            impl = player.build("function", entry)
            assert [c for c, _, _ in soak(player, impl, plan, "cuda", random.Random(7))] == expected, entry
        player.close()
    finally:
        server.close()


def test_player_a_request_whose_tensors_do_not_fit_is_answered_as_out_of_memory(monkeypatch):
    """Memory that runs out while the player rebuilds a request's tensors (its GPU full beside other checks) is
    answered as the player's own OutOfMemoryError, which the checker reports as KL302 and the executor retries; the
    player went on (the connection stays in step). It had ended with status 0 (a KL300 on avg_pool2d, H100,
    2026-12-06)."""
    import threading

    import torch

    from kernel_lsp.player import play as play_module
    wire = sys.modules["wire"]  # the module play.py imports, beside it
    real = wire.decode
    calls = []

    def decode(value, memory):
        calls.append(1)
        if len(calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(value, memory)
    monkeypatch.setattr(wire, "decode", decode)
    a, b = socket.socketpair()
    a.settimeout(30)  # an answer that never comes fails here, not at pytest's timeout
    t = threading.Thread(target=play_module.play, args=(b, "cpu"), daemon=True)
    t.start()
    try:
        wire.send(a, {"op": "load", "path": "x.py"})
        answer = wire.recv(a)
        assert answer["error"]["type"] == "OutOfMemoryError" and "out of memory" in answer["error"]["text"], answer
        assert answer["error"]["fault"]
        wire.send(a, {"op": "no such op"})  # still in step: this one is read, and ends the player
        t.join(30)
        assert not t.is_alive()
    finally:
        a.close()
        b.close()


def _scratch_player(device: str):
    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer(device)
    player = Player(server.fork(SandboxOptions()), device)
    player.load(str(FIXTURES / "player" / "scratch_memory.py"))
    return server, player, player.build("function", "sum_with_scratch")


def test_trim_cache_without_cuda_is_nothing(monkeypatch):
    from kernel_lsp.player.devmem import trim_cache
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)  # (a GPU session's earlier tests started it)
    assert trim_cache(0) == 0


def test_player_trim_answers_on_the_cpu():
    """`trim` (the checker's request after memory ran out beside other checks) has nothing to give back on the CPU."""
    server, player, impl = _scratch_player("cpu")
    try:
        out = impl(torch.ones(4), torch.tensor(1 << 20))
        assert float(out[0]) == 5.0
        assert player.trim() == 0
        player.close()
    finally:
        server.close()


@pytest.mark.gpu
def test_player_on_a_gpu_gives_back_what_it_caches_beyond_a_gib():
    """A call that needed 3 GiB of scratch for a moment: the player keeps at most a GiB of it cached after the
    request (other checks verify beside it on the GPU), and `trim` gives back the rest."""
    server, player, impl = _scratch_player("cuda")
    try:
        out = impl(torch.ones(4, device="cuda"), torch.tensor(3 << 30))
        assert float(out[0]) == 5.0
        assert player.trim() <= 1 << 30
        assert player.trim() < 64 << 20  # at most a small block's segment, which a live tensor shares
        player.close()
    finally:
        server.close()


def _states_under(server) -> dict[int, str]:
    """The state letter (/proc/PID/stat) of each process under the players' server but its own."""
    from kernel_lsp.player.isolate import descendants
    own = server.own_pids()
    states = {}
    for p in descendants(own[0]):
        if p not in own:
            with contextlib.suppress(OSError):
                states[p] = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return states


def _beats(path) -> list[int]:
    try:
        return [int(t) for t in path.read_text().split()]
    except (OSError, ValueError):
        return []


def test_player_a_hold_stops_what_the_implementation_started_and_lets_it_go_on(tmp_path):
    """While the checker times PyTorch's side (checker/measure/sides.py `SplitClock.quiet`), nothing of the
    implementation's runs: `Player.stop` has its server stop the player, a thread it started and a process it started
    in a session of its own; the player's next request lets them all go on (a stopped player would never answer)."""
    import time

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer("cpu")
    try:
        player = Player(server.fork(SandboxOptions(writable=[str(tmp_path)])), "cpu")
        player.holder = server.hold
        player.load(str(FIXTURES / "player" / "background.py"))
        spin = player.build("function", "spin")
        folder = torch.tensor(list(str(tmp_path).encode()), dtype=torch.uint8)
        assert torch.equal(spin(torch.ones(2), folder), torch.full((2,), 2.0))
        beats = [tmp_path / "thread.txt", tmp_path / "child.txt"]
        deadline = time.monotonic() + 60
        while not all(_beats(p) for p in beats):
            assert time.monotonic() < deadline, "the implementation's thread and process never beat"
            time.sleep(0.01)
        assert player.stop() == 0 and player.held
        states = _states_under(server)
        assert len(states) >= 2  # the player and the process it started
        assert set(states.values()) <= {"T", "t"}, states  # every process under the server, however started
        t0 = time.monotonic_ns()
        time.sleep(0.3)
        t1 = time.monotonic_ns()
        for p in beats:
            assert [t for t in _beats(p) if t0 < t < t1] == [], f"{p.name}: beat while held"
        assert torch.equal(spin(torch.ones(2), folder), torch.full((2,), 2.0))  # a request: they go on
        assert not player.held
        deadline = time.monotonic() + 30
        while not all(any(t > t1 for t in _beats(p)) for p in beats):
            assert time.monotonic() < deadline, "the implementation's thread and process did not go on"
            time.sleep(0.01)
        player.stop()
        player.close()  # the hold's end, with the player's: nothing stays stopped, nothing stays alive
        deadline = time.monotonic() + 30
        while _states_under(server):
            assert time.monotonic() < deadline, "a process of the implementation's outlived its player"
            time.sleep(0.01)
    finally:
        server.close()


def test_player_a_hold_lets_go_only_of_what_no_other_hold_still_stops(tmp_path):
    """Two holds on one server (two checks timing beside one player's processes): the first one's `go` leaves them
    stopped while the second still holds them; the second's lets them go on."""
    import time

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer("cpu")
    try:
        player = Player(server.fork(SandboxOptions(writable=[str(tmp_path)])), "cpu")
        player.load(str(FIXTURES / "player" / "background.py"))
        folder = torch.tensor(list(str(tmp_path).encode()), dtype=torch.uint8)
        player.build("function", "spin")(torch.ones(2), folder)
        beat = tmp_path / "thread.txt"
        deadline = time.monotonic() + 60
        while not _beats(beat):
            assert time.monotonic() < deadline, "the implementation's thread never beat"
            time.sleep(0.01)
        first, second = server.hold(), server.hold()
        if first.stop() is None:
            pytest.skip("this server cannot tell its processes (its /proc is not its namespace's)")
        assert second.stop() == 0
        first.go()
        states = _states_under(server)
        assert states and set(states.values()) <= {"T", "t"}, states  # the second hold still stops them
        t0 = time.monotonic_ns()
        time.sleep(0.2)
        assert [t for t in _beats(beat) if t > t0] == []
        second.go()
        deadline = time.monotonic() + 30
        while not [t for t in _beats(beat) if t > t0]:
            assert time.monotonic() < deadline, "the thread did not go on once no hold stopped it"
            time.sleep(0.01)
        first.close()
        second.close()
        player.close()
    finally:
        server.close()
