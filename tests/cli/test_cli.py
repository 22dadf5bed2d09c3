"""Exit codes and error messages of `kernel-lsp check`: 0 clean, 1 findings, 2 usage or configuration."""

import json
import re
import shutil

from tests.conftest import CORPUS, FIXTURES, run_cli, write


def test_cli_exit_zero_when_clean():
    proc = run_cli("check", str(CORPUS / "ok_add_fp32.py"))
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout


def test_cli_exit_one_on_findings():
    proc = run_cli("check", str(CORPUS / "bug_grid_too_small.py"))
    assert proc.returncode == 1 and "KL203" in proc.stdout


def test_cli_exit_two_for_missing_path(tmp_path):
    proc = run_cli("check", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "path does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_exit_two_for_bad_flag_and_bad_target(tmp_path):
    assert run_cli("check", ".", "--format", "xml").returncode == 2
    proc = run_cli("check", str(CORPUS / "ok_add_fp32.py"), "--target", "sm_42")
    assert proc.returncode == 2 and "unknown target 'sm_42'" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_exit_two_for_broken_config(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.kernel-lsp]\nverify = \"sometimes\"\n")
    write(tmp_path / "k.py", "import triton\n")
    proc = run_cli("check", str(tmp_path))
    assert proc.returncode == 2
    assert "pyproject.toml:2" in proc.stderr and "verify" in proc.stderr and "Traceback" not in proc.stderr
    write(tmp_path / "pyproject.toml", "[tool.kernel-lsp\n")
    proc = run_cli("check", str(tmp_path))
    assert proc.returncode == 2 and "not valid TOML" in proc.stderr


def test_cli_reference_flag_links_kernelbench(tmp_path):
    impl = write(tmp_path / "impl.py", (CORPUS / "kb_softmax_ok" / "impl.py").read_text()
                 .replace("# kernel-lsp: reference=problem.py\n", ""))
    proc = run_cli("check", str(impl), "--reference", str(CORPUS / "kb_softmax_ok" / "problem.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("check", str(impl))
    assert proc.returncode == 0 and "KL004" in proc.stdout  # unlinked: a hint, not a failure


def test_cli_reference_wins_over_the_files_link_pragma(tmp_path):
    """A file whose pragma names a reference of its own (zeros against zeros) is judged against --reference: wrong,
    and the ignored pragma is said (KL008)."""
    impl = shutil.copy(FIXTURES / "candidates" / "own_reference.py", tmp_path / "hack.py")
    proc = run_cli("check", str(impl), "--reference", str(FIXTURES / "candidates" / "relu_problem.py"), "--no-cache",
                   "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)["files"][0]["findings"]
    codes = {f["code"]: f for f in findings}
    assert "KL200" in codes and codes["KL008"]["severity"] == "info" and codes["KL008"]["range"]["line"] == 0


def test_cli_syntax_error_and_non_utf8_are_findings(tmp_path):
    write(tmp_path / "broken.py", "import triton\n@triton.jit\ndef k(:\n")
    (tmp_path / "latin1.py").write_bytes(b"import triton\n# caf\xe9\n")
    proc = run_cli("check", str(tmp_path / "broken.py"), str(tmp_path / "latin1.py"))
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "broken.py:3:7: KL001" in proc.stdout and "latin1.py:2:1: KL001" in proc.stdout


def test_cli_ignore_pragma_suppresses_a_finding(tmp_path):
    text = (CORPUS / "bug_never_launched.py").read_text()
    write(tmp_path / "k.py", text)
    proc = run_cli("check", str(tmp_path / "k.py"), "--no-cache", "--format", "json")
    found = {f["code"]: f["range"]["line"] for f in json.loads(proc.stdout)["files"][0]["findings"]}
    lines = text.splitlines()
    # KL205 lands on the line that returned the result, KL104 on the kernel that never ran
    assert lines[found["KL205"]].strip() == "return x * 3.0" and lines[found["KL104"]].startswith("def _scale_kernel")
    lines[found["KL205"]] += "  # kernel-lsp: ignore[KL205]"
    lines[found["KL104"]] += "  # kernel-lsp: ignore[KL104]"
    write(tmp_path / "k.py", "\n".join(lines) + "\n")
    proc = run_cli("check", str(tmp_path / "k.py"), "--no-cache")
    assert proc.returncode == 0, proc.stdout


def test_cli_says_once_that_performance_was_not_measured_without_a_gpu(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    shutil.copy(CORPUS / "ok_gelu_fp32.py", tmp_path / "b.py")
    proc = run_cli("check", str(tmp_path), "--no-cache", "--report", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("Checked 2 files") and lines.count(lines[-2]) == 1
    assert lines[-2] == ("Performance: not measured: no GPU (kernels ran in the CPU interpreter); use a CUDA machine "
                         "or a runner")
    assert not any(re.search(r"\b\d+(\.\d+)? us\b|GB/s|x eager", line) for line in lines)  # never a number
    index = (tmp_path / "report" / "index.html").read_text()
    assert "a.py" in index and "not measured: no GPU" in index and "<img" not in index


def test_cli_no_measure_leaves_no_note(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    proc = run_cli("check", str(tmp_path / "a.py"), "--no-cache", "--no-measure", "--format", "json")
    doc = json.loads(proc.stdout)
    assert all("performance_note" not in k for k in doc["files"][0]["kernels"].values())
