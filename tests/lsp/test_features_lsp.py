"""What the editor shows (issue 43 items 1, 2, 4 and 11), over raw JSON-RPC against the real server: one
diagnostic per problem as the CLI prints one lead line, a hover that never says "Verified" for a failed kernel,
no Optimize or Tune where nothing can be timed, and the text's own findings (a malformed pragma, a PyTorch
fallback) as the CLI reports them."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import CORPUS, write
from tests.lsp.rawclient import RawClient, verification_ended


def _verified(client: RawClient, uri: str) -> dict:
    """The last diagnostics published for `uri` before its verification ended (not one a later run replaced)."""
    done = client.wait(verification_ended(uri), timeout=300)
    return [m for m in client.messages[: client.messages.index(done)]
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri][-1]["params"]


def _def_position(path: Path, kernel: str) -> dict:
    line = next(i for i, ln in enumerate(path.read_text().splitlines()) if ln.startswith(f"def {kernel}("))
    return {"line": line, "character": 6}


def _session(tmp_path: Path, *cases: str) -> tuple[RawClient, list[str]]:
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-lsp]\ntimeout = 120\n")
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    return client, [client.open(Path(shutil.copy(CORPUS / c, tmp_path / c))) for c in cases]


def test_features_one_diagnostic_per_problem_and_a_failed_kernel_is_not_called_verified(tmp_path):
    case = "bug_half_sum_and_strides.py"  # three KL200 findings at one store: values, layout, size
    client, (uri,) = _session(tmp_path, case)
    try:
        params = _verified(client, uri)
        kl200 = [d for d in params["diagnostics"] if d["code"] == "KL200"]
        # the CLI prints one lead line for them; the editor stacked three
        assert len(kl200) == 1, [(d["code"], d["message"][:200]) for d in params["diagnostics"]]
        (d,) = kl200
        assert d["data"]["findings"] == 3 and "also on: " in d["message"], d
        for variant in ("seed-2", "transposed", "strided", "odd-size", "larger-size"):
            assert variant in d["message"], (variant, d["message"])
        assert len(d["data"]["variants"]) == len(set(d["data"]["variants"]))
        rid = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                    "position": _def_position(tmp_path / case, "_add_kernel")})
        hover = client.response(rid)["result"]["contents"]["value"]
        assert "Verified on" not in hover and "Failed verification on cpu-interpreter" in hover, hover
    finally:
        client.proc.kill()
        client.proc.wait()


def test_features_optimize_and_tune_are_not_offered_where_nothing_can_be_timed(tmp_path):
    """No GPU and no runner: a verified kernel gets no Optimize or Tune action (Tune ran 52 s for nothing)."""
    case = "ok_add_fp32.py"
    client, (uri,) = _session(tmp_path, case)
    try:
        _verified(client, uri)
        position = _def_position(tmp_path / case, "_add_kernel")
        rid = client.request("textDocument/codeAction", {"textDocument": {"uri": uri},
                                                         "range": {"start": position, "end": position},
                                                         "context": {"diagnostics": []}})
        titles = [a["title"] for a in client.response(rid)["result"]]
        assert "Verify again now" in titles, titles
        assert not [t for t in titles if t.startswith(("Optimize", "Tune"))], titles
    finally:
        client.proc.kill()
        client.proc.wait()


def test_features_a_malformed_pragma_and_a_pytorch_fallback_are_shown_as_the_cli_reports_them(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-lsp]\ntimeout = 120\n")
    write(tmp_path / "problem.py", "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
          "        return torch.relu(x)\ndef get_inputs():\n    return [torch.randn(8)]\n"
          "def get_init_inputs():\n    return []\n")
    fallback = write(tmp_path / "relu_new.py", "# kernel-lsp: reference=problem.py\nimport torch\n\n\n"
                     "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n")
    kernel = (CORPUS / "ok_add_fp32.py").read_text().replace("# kernel-lsp: entry=", "# kernel-lsp entry=")
    malformed = write(tmp_path / "add.py", kernel)
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        uris = [client.open(fallback), client.open(malformed)]
        found = {}
        for uri, code in zip(uris, ("KL205", "KL009")):
            m = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and any(d["code"] == code for d in m["params"]["diagnostics"]),
                            timeout=120)
            found[code] = next(d for d in m["params"]["diagnostics"] if d["code"] == code)
        assert found["KL205"]["severity"] == 1 and "PyTorch fallback" in found["KL205"]["message"]
        assert found["KL009"]["severity"] == 2 and found["KL009"]["range"]["start"]["line"] == 2
        assert "`# kernel-lsp: entry=add reference=ref inputs=make_inputs`" in found["KL009"]["message"]
    finally:
        client.proc.kill()
        client.proc.wait()


def test_features_a_key_pasted_into_the_settings_is_masked_in_the_editor(tmp_path):
    key = "sk-proj-Q3vR9tXw2LmN8pKd4HsYb7Zc1AeF6gJu"
    (tmp_path / "pyproject.toml").write_text(f'[tool.kernel-lsp]\n\n[tool.kernel-lsp.llm]\napi-key-env = "{key}"\n')
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = (tmp_path / "pyproject.toml").as_uri()
        m = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                        and m["params"]["diagnostics"], timeout=60)
        (d,) = m["params"]["diagnostics"]
        assert d["code"] == "KL006" and d["range"]["start"]["line"] == 3 and "sk-pro***" in d["message"], d
        assert key[:12] not in str(client.messages)
    finally:
        client.proc.kill()
        client.proc.wait()
