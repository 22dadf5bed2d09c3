"""`kernel-lsp optimize --mode fix` against a scripted OpenAI-compatible server on loopback, through the real
`openai` client: a fix is accepted only when verified; wrong, unparsable, blocked, cheating candidates are
rejected, and their failures reach the next prompt; the key is read from its variable and never logged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.propose.fake_llm import FakeLLM

BROKEN = '''
# kernel-lsp: entry=scale reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

N = 1000


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 2 x"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def scale(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


def ref(x):
    return x * 2.0


def make_inputs():
    return [torch.randn(N)]
'''

FIXED_KERNEL = '''```python
@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 2 x"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
```
`factor` was never defined; the scale is 2.'''

WRONG_KERNEL = FIXED_KERNEL.replace("* 2.0, mask=mask)", "* 3.0, mask=mask)")
SYNTAX_ERROR = "```python\ndef _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr)\n    pass\n```"


def fallback_reply() -> str:
    # The launch is still there to be seen (a candidate without one is refused unread), but it never runs.
    return "```python\n" + BROKEN.replace("* factor, mask=mask)", "* 2.0, mask=mask)").replace(
        "    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)\n    return out",
        "    if x.numel() < 0:\n"
        "        _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)\n"
        "    return x * 2.0  # PyTorch does it") + "```"


def cached_reply() -> str:
    return "```python\n" + BROKEN.replace("* factor, mask=mask)", "* 2.0, mask=mask)").replace(
        "def scale(x):\n", "_SEEN = {}\n\n\ndef scale(x):\n    if x.shape in _SEEN:\n        return _SEEN[x.shape]\n"
    ).replace("    return out\n\n\ndef ref", "    _SEEN[x.shape] = out\n    return out\n\n\ndef ref") + "```"


def subprocess_reply(marker: Path) -> str:
    return ("```python\n" + BROKEN.replace("* factor, mask=mask)", "* 2.0, mask=mask)").replace(
        "import torch\n", f"import subprocess\nimport torch\nsubprocess.run(['touch', {str(marker)!r}])\n") + "```")


def workspace(tmp_path: Path, fake: FakeLLM, **llm) -> Path:
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"endpoint": fake.url, "model": "scripted", **llm}.items())
    (tmp_path / "pyproject.toml").write_text(f"[tool.kernel-lsp]\ntimeout = 120\n\n[tool.kernel-lsp.llm]\n{table}")
    return write(tmp_path / "scale.py", BROKEN)


def optimize(path: Path, *args: str, env: dict | None = None) -> tuple[int, dict, str]:
    proc = run_cli("optimize", str(path), "--mode", "fix", "--format", "json", *args, cwd=path.parent, env=env,
                   timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_llm_fix_of_a_compile_error_is_verified_and_applied(tmp_path):
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--apply", "--candidates", "1", "--rounds", "1")
    assert code == 0 and p["accepted"] and "fixes KL100" in p["summary"]
    text = path.read_text()
    assert "* 2.0, mask=mask)" in text and "factor" not in text
    assert text.replace("* 2.0, mask=mask)", "* factor, mask=mask)") == BROKEN.lstrip("\n")  # a minimal edit
    assert p["diff"].count("\n-") == 1 and p["variants"] and all(v["verdict"] == "ok" for v in p["variants"])
    prompt = fake.prompt(0)
    assert "KL100" in prompt and "factor" in prompt and "def ref(x)" in prompt  # the diagnostic and the reference
    check = run_cli("check", str(path), "--no-cache", cwd=tmp_path)
    assert check.returncode == 0, check.stdout


def test_llm_wrong_candidate_is_rejected_and_its_failure_is_in_the_next_prompt(tmp_path):
    with FakeLLM([WRONG_KERNEL, FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--candidates", "1", "--rounds", "2")
        second = fake.prompt(1)
    assert code == 0 and p["accepted"]
    first = p["candidates"][0]
    assert first["verdict"] == "rejected" and "KL200" in first["reason"] + " ".join(first["findings"])
    assert "Earlier candidates that were rejected" in second and "KL200" in second
    assert path.read_text() == BROKEN.lstrip("\n")  # not applied without --apply


def test_llm_reply_with_a_syntax_error_is_a_failed_candidate_not_a_crash(tmp_path):
    with FakeLLM([SYNTAX_ERROR, FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--candidates", "1", "--rounds", "2")
    assert code == 0 and p["candidates"][0]["verdict"] == "unparsable" and "does not parse" in p["candidates"][0]["reason"]


def test_llm_candidate_importing_subprocess_is_blocked_before_it_runs(tmp_path):
    marker = tmp_path / "ran.txt"
    with FakeLLM([subprocess_reply(marker), FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, _ = optimize(path, "--candidates", "1", "--rounds", "2")
    blocked = p["candidates"][0]
    assert blocked["verdict"] == "blocked" and "imports subprocess" in blocked["reason"]
    assert not marker.exists()  # nothing of it ever ran
    assert code == 0 and p["accepted"]


@pytest.mark.parametrize("reply, code", [(fallback_reply(), "KL205"), (cached_reply(), "KL206")],
                         ids=["pytorch-fallback", "cached-output"])
def test_llm_candidates_that_cheat_are_rejected(tmp_path, reply, code):
    with FakeLLM([reply]) as fake:
        path = workspace(tmp_path, fake)
        rc, p, _ = optimize(path, "--candidates", "1", "--rounds", "1")
    assert rc == 1 and not p["accepted"]
    (c,) = p["candidates"]
    assert c["verdict"] == "rejected" and code in c["reason"] + " ".join(c["findings"]), c


def test_llm_key_is_sent_only_to_the_endpoint_and_never_logged(tmp_path):
    secret = "sk-kernel-lsp-test-7c1e9b"
    env = {"OPENAI_API_KEY": secret, "KERNEL_LSP_LOG": "debug"}
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, stderr = optimize(path, "--candidates", "1", "--rounds", "1", env=env)
        assert fake.requests, f"the endpoint was never asked: {p}\n{stderr[-3000:]}"
        sent = fake.requests[0]["headers"].get("authorization")
    assert code == 0 and sent == f"Bearer {secret}"
    assert secret not in stderr and secret not in json.dumps(p)
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_llm_endpoint_without_a_key_works_with_the_variable_unset(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        proc = subprocess.run([sys.executable, "-m", "kernel_lsp.cli", "optimize", str(path), "--format", "json",
                               "--candidates", "1", "--rounds", "1"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert fake.requests[0]["headers"]["authorization"] == "Bearer no-key"


def test_llm_token_budget_stops_the_requests(tmp_path):
    with FakeLLM([WRONG_KERNEL], tokens_per_reply=900) as fake:
        path = workspace(tmp_path, fake, **{"max-tokens": 1000})
        code, p, _ = optimize(path, "--candidates", "3", "--rounds", "2")
        asked = len(fake.requests)
    assert code == 1 and asked == 2  # the second reply spent the budget: no third call
    assert any("token budget (1000) is spent" in n for n in p["notes"])


def test_llm_optimize_is_refused_before_any_request_where_nothing_can_be_timed(tmp_path):
    """Issue 43 item 4: without a GPU or a runner, `--mode optimize` asked the model 4 times (6,000 tokens) and then
    said none could be timed. Now nothing is asked and nothing is checked: a usage error at once."""
    with FakeLLM([FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        proc = run_cli("optimize", str(path), "--mode", "optimize", "--device", "cpu", cwd=tmp_path, timeout=120)
        asked = len(fake.requests)
    assert proc.returncode == 2 and asked == 0, proc.stdout + proc.stderr
    assert "--mode optimize accepts only a candidate timed faster than the current kernel" in proc.stderr
    assert "--mode fix needs no GPU" in proc.stderr and "Traceback" not in proc.stderr
