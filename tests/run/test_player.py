"""The player: the process that runs the implementation holds nothing of the checker, sees no process outside its own
pid namespace (so no ancestor's environment, where an API key would be), and what it sends back is decoded without
trusting it. Tried from a kernel file (tests/fixtures/player/spy.py), through the real CLI, on the warm and the cold
paths."""

from __future__ import annotations

import json
import socket
import struct
import sys

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
        report = check_file(CheckRequest(FIXTURES / "player" / "spy.py", Settings(timeout=120), ROOT,
                                         executor=executor))
    assert report.stats["warm_workers"] == int(warm)
    assert SECRET not in json.dumps(report.to_dict())  # nothing of the key in the report either
    (finding,) = [f for f in report.findings if f.code == "KL105"]
    text = finding.message
    return json.loads(text[text.index("SPY") + 3: text.index("YPS")])


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_player_holds_nothing_of_the_checker_and_sees_no_secret(warm, monkeypatch):
    """The issue's mechanisms, from a kernel file: no kernel-lsp module, argument, variable or frame; no float64
    tensor (no truth); TMPDIR is not the working folder; and only the player's own pid namespace in /proc, so the
    parent's key, though in the parent's own environment, is in no /proc/PID/environ the player can read."""
    seen = _spy(warm, monkeypatch)
    assert seen["modules"] == [] and seen["env_names"] == [] and seen["frame_files"] == []
    assert "kernel" not in seen["argv"] and "kernel" not in seen["cmdline"]
    assert seen["float64"] == 0 and not seen["tmpdir_is_cwd"]
    assert seen["secret_seen"] == [] and not seen["key_in_env"]
    assert max(seen["pids"]) < 50, seen["pids"]  # its own namespace: the server, itself, nothing else


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


def test_player_wire_refuses_what_it_cannot_check():
    """What the player sends is decoded without pickle: an unknown value kind, an unknown dtype, a view past its
    storage, a storage past its memory are each a WireError, never an object built from the bytes."""
    from kernel_lsp.player import wire

    def sent(doc: dict, memory: bytes = b""):
        a, b = socket.socketpair()
        import os
        fds = []
        if memory:
            fd = os.memfd_create("m")
            os.write(fd, memory)
            fds = [fd]
        payload = json.dumps(doc).encode()
        socket.send_fds(a, [struct.pack("!II", len(payload), len(fds))], fds)
        a.sendall(payload)
        try:
            return wire.recv(b)
        finally:
            a.close()
            b.close()
    assert sent({"m": {"__dict__": [["x", 1]]}, "t": []}) == {"x": 1}
    tensor = {"s": 0, "dtype": "float32", "shape": [4], "stride": [1], "offset": 0, "device": "cpu"}
    assert sent({"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 16]]}, bytes(16))["t"].shape == (4,)
    bad = [({"m": {"__pickle__": "gASV"}, "t": []}, b""),
           ({"m": {"__dict__": [["t", {"__tensor__": {**tensor, "dtype": "object"}}]]}, "t": [[0, 16]]}, bytes(16)),
           ({"m": {"__dict__": [["t", {"__tensor__": {**tensor, "shape": [5]}}]]}, "t": [[0, 16]]}, bytes(16)),
           ({"m": {"__dict__": [["t", {"__tensor__": tensor}]]}, "t": [[0, 64]]}, bytes(16))]
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
    _, doc = check_json(tmp_path / "k.py", extra=("--no-cache",))
    lines = marked.split("\n")
    for f in doc["files"][0]["findings"]:
        if f["code"] == "KL208":
            assert "tl.load" in lines[f["range"]["line"]] or "tl.store" in lines[f["range"]["line"]], f
