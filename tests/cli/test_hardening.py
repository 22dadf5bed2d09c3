"""What a newcomer hit (issue "hardening"): a broken kernel never passes, errors name what the user typed and blame
the right side, and `check` says what it did and did not check."""

from __future__ import annotations

import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time

from tests.conftest import CORPUS, FIXTURES, run_cli, write


def test_hardening_a_kernel_file_that_does_not_parse_is_reported_from_a_directory_walk(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "good.py")
    (tmp_path / "broken_kernel.py").write_text("import triton\n\n@triton.jit\ndef k(x_ptr:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8 and no coding declaration
    proc = run_cli("check", str(tmp_path), "--no-cache")
    assert proc.returncode == 1, proc.stdout
    assert "broken_kernel.py:4:" in proc.stdout and "KL001" in proc.stdout
    assert "latin.py:1:1: KL001" in proc.stdout and "not valid utf-8" in proc.stdout
    assert "All checks passed" not in proc.stdout


def test_hardening_a_declared_latin1_encoding_is_accepted(tmp_path):
    source = (CORPUS / "ok_add_fp32.py").read_text()
    path = tmp_path / "latin_ok.py"
    path.write_bytes(("# -*- coding: latin-1 -*-\n# caf\u00e9\n" + source).encode("latin-1"))
    proc = run_cli("check", str(path), "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 verified" in proc.stdout


def test_hardening_nothing_checked_is_not_a_pass(tmp_path):
    (tmp_path / "plain.py").write_text("x = 1\n")
    proc = run_cli("check", str(tmp_path))
    assert proc.returncode == 1 and "nothing was checked" in proc.stderr and "All checks passed" not in proc.stdout
    (tmp_path / "empty").mkdir()
    assert run_cli("check", str(tmp_path / "empty")).returncode == 1


def test_hardening_a_plain_file_named_directly_is_not_a_pass_either(tmp_path):
    """Issue 27 item 7: a folder without kernels exits 1; the same file named directly did not."""
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("y = 2\n")
    for name in ("plain.py", "notes.txt"):
        for extra in ((), ("--require-reference",)):
            proc = run_cli("check", str(tmp_path / name), *extra)
            assert proc.returncode == 1 and "nothing was checked" in proc.stderr, (name, extra, proc.stderr)
            assert "All checks passed" not in proc.stdout


def test_hardening_a_reference_path_with_a_space_links_when_quoted(tmp_path):
    """Issue 27 item 6: a quoted pragma path with a space (and non-ASCII) links and verifies; a folder given as
    --reference is called a folder."""
    case = CORPUS / "kb_softmax_ok"
    shutil.copy(case / "problem.py", tmp_path / "réf problem.py")
    impl = (case / "impl.py").read_text().replace("reference=problem.py", 'reference="réf problem.py"')
    (tmp_path / "impl.py").write_text(impl, encoding="utf-8")
    proc = run_cli("check", str(tmp_path / "impl.py"), "--no-cache", "--require-reference")
    assert proc.returncode == 0 and "1 verified" in proc.stdout, proc.stdout + proc.stderr
    proc = run_cli("check", str(tmp_path / "impl.py"), "--reference", str(tmp_path))
    assert proc.returncode == 2 and "is a folder" in proc.stderr, proc.stderr


def test_hardening_a_file_named_twice_is_checked_once(tmp_path):
    """Issue 27 item 7: `check f.py f.py ./f.py` checked and printed the same file three times."""
    shutil.copy(CORPUS / "bug_relu_drops_nan.py", tmp_path / "f.py")
    proc = run_cli("check", "f.py", "f.py", "./f.py", str(tmp_path / "f.py"), ".", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert sum(1 for line in proc.stdout.splitlines() if line.startswith("f.py:")) == 1, proc.stdout
    assert "Checked 1 file, 1 kernel" in proc.stdout


def test_hardening_a_kernel_that_fails_to_compile_is_not_counted_verified(tmp_path):
    """Issue 27 item 7: the summary called kernels with a compile error (KL100) "verified"."""
    shutil.copy(FIXTURES / "compile_errors" / "static_assert.py", tmp_path / "k.py")
    proc = run_cli("check", str(tmp_path / "k.py"), "--no-cache", "--format", "json")
    stats = json.loads(proc.stdout)["stats"]
    assert (stats["verified"], stats["compile_failed"], stats["unverified"]) == (0, 1, 0), stats
    proc = run_cli("check", str(tmp_path / "k.py"), "--no-cache", "--require-reference")
    assert proc.returncode == 1 and "(0 verified, 1 failed to compile; 0 from cache)" in proc.stdout, proc.stdout
    assert "1 kernel(s) not verified against a reference" in proc.stderr


def test_hardening_summary_says_what_was_and_was_not_verified_and_require_reference_fails(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "linked.py")
    write(tmp_path / "unlinked.py", """
        import triton
        import triton.language as tl


        @triton.jit
        def _k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
        """)
    proc = run_cli("check", str(tmp_path), "--no-cache")
    assert proc.returncode == 0, proc.stdout  # a hint alone fails nothing...
    assert "Checked 2 files, 2 kernels (1 verified, 1 without a usable reference" in proc.stdout
    assert "All checks passed" not in proc.stdout  # ...but is not a clean bill either
    proc = run_cli("check", str(tmp_path), "--no-cache", "--require-reference")
    assert proc.returncode == 1 and "1 kernel(s) not verified against a reference" in proc.stderr


def test_hardening_output_path_is_checked_before_the_run(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    for target, says in ((tmp_path / "missing" / "out.json", "does not exist"), (tmp_path, "is a directory")):
        start = time.monotonic()
        proc = run_cli("check", str(tmp_path / "a.py"), "--format", "json", "-o", str(target))
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr
        assert time.monotonic() - start < 20  # refused before checking anything
    assert not list(tmp_path.glob("*.tmp"))
    proc = run_cli("check", str(tmp_path / "a.py"), "--format", "json", "-o", str(tmp_path / "out.json"))
    assert proc.returncode == 0 and json.loads((tmp_path / "out.json").read_text())["version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_hardening_device_cuda_without_a_gpu_is_a_usage_error(tmp_path):
    if os.path.exists("/dev/nvidiactl"):
        return  # a GPU machine: the flag is fine there
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    proc = run_cli("check", str(tmp_path / "a.py"), "--device", "cuda")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--device cuda, but this machine has no CUDA GPU" in proc.stderr and "KL900" not in proc.stdout


def test_hardening_errors_name_the_flag_the_user_typed(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    proc = run_cli("check", str(tmp_path / "a.py"), "--jobs", "0")
    assert proc.returncode == 2 and "--jobs: expected an integer from 1 to 64" in proc.stderr
    assert "workers" not in proc.stderr
    hang = shutil.copy(FIXTURES / "faults" / "hang.py", tmp_path / "hang.py")
    proc = run_cli("check", str(hang), "--timeout", "3", "--no-cache")
    assert "raise --timeout if the kernel is just slow" in proc.stdout, proc.stdout


def test_hardening_pyproject_errors_point_at_the_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-lsp]\ntargets = ["sm_90"]\n\n\ntimeout = -1\n')
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    proc = run_cli("check", str(tmp_path / "a.py"))
    assert proc.returncode == 2 and "pyproject.toml:5:" in proc.stderr, proc.stderr


PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x + y


def get_inputs():
    return [torch.randn(8, 8), {inputs}]


def get_init_inputs():
    return []
"""

IMPL = """
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = {alloc}
        _add[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
        return out
"""


def _case(tmp_path, inputs: str, alloc: str = "torch.empty_like(x)"):
    write(tmp_path / "problem.py", PROBLEM.format(inputs=inputs))
    return write(tmp_path / "impl.py", IMPL.format(alloc=alloc))


def test_hardening_a_failing_input_factory_blames_the_reference_with_its_line(tmp_path):
    impl = _case(tmp_path, "int('not a number')")
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["code"] == "KL003" and "input factory raised ValueError" in d["message"] and "problem.py:11" in d["message"]
    assert "implementation" not in d["message"]


def test_hardening_a_wrong_arity_get_init_inputs_names_its_line_and_the_constructors(tmp_path):
    """Issue 27 item 10: the message named the reference but not where the mismatch is."""
    problem = PROBLEM.format(inputs="torch.randn(8, 8)").replace(
        "class Model(nn.Module):\n", "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
    ).replace("def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [3]")
    write(tmp_path / "problem.py", problem)
    impl = write(tmp_path / "impl.py", IMPL.format(alloc="torch.empty_like(x)"))
    lines = (tmp_path / "problem.py").read_text().splitlines()
    init_line = lines.index("def get_init_inputs():") + 1
    ctor_line = lines.index("    def __init__(self):") + 1
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["code"] == "KL003", d
    assert (f"get_init_inputs (problem.py:{init_line}) gives 1 value, Model.__init__ (problem.py:{ctor_line}) "
            "takes 0") in d["message"], d["message"]


def test_hardening_inputs_of_the_wrong_type_blame_the_reference(tmp_path):
    impl = _case(tmp_path, "'not a tensor'")
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    codes = [d["code"] for d in json.loads(proc.stdout)["diagnostics"]]
    assert codes == ["KL003"], proc.stdout
    assert "the reference fails on its own inputs too" in proc.stdout and "problem.py:7" in proc.stdout


def test_hardening_an_impossible_allocation_is_out_of_memory(tmp_path):
    impl = _case(tmp_path, "torch.randn(8, 8)", alloc="torch.empty(10**11)")
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["code"] == "KL302" and d["range"]["line"] == 16, d  # the allocation, 0-based


def test_hardening_memory_that_runs_out_in_a_variant_is_out_of_memory_not_a_refusal(tmp_path):
    """Memory that runs out on a variant's inputs (beside other checks on a GPU: adam's transposed variant on an H100
    with three workers) stops the check with KL302, which the executor retries alone; it is no KL209 refusal."""
    impl = _case(tmp_path, "torch.randn(8, 8)", alloc="torch.empty_like(x) if x.is_contiguous() else torch.empty(10**11)")
    proc = run_cli("check", str(impl), "--no-cache", "--format", "json")
    codes = [d["code"] for d in json.loads(proc.stdout)["diagnostics"]]
    assert "KL302" in codes and "KL209" not in codes, proc.stdout
    assert "variant's inputs" in proc.stdout, proc.stdout


def test_hardening_check_help_lists_exit_codes_and_formats():
    out = " ".join(run_cli("check", "--help").stdout.split())
    assert "exit codes: 0" in out and "130 interrupted" in out and "sarif: SARIF 2.1.0" in out
    assert ".kernel_lsp_cache" in out


def test_hardening_help_points_to_the_docs():
    """Issue 27 item 10: --help did not say where the documentation is."""
    top = " ".join(run_cli("--help").stdout.split())
    assert "Documentation: https://github.com/kernel-lsp/kernel-lsp/tree/main/docs" in top, top
    check = " ".join(run_cli("check", "--help").stdout.split())
    assert "/docs/diagnostics.md" in check, check


def test_hardening_sarif_uris_are_percent_encoded(tmp_path):
    """Issue 27 item 10: a path with a space went into SARIF with a raw space (a URI has %20)."""
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-lsp]\n")
    shutil.copy(CORPUS / "bug_relu_drops_nan.py", tmp_path / "my kernel.py")
    proc = run_cli("check", str(tmp_path / "my kernel.py"), "--format", "sarif", "--no-cache")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(proc.stdout)["runs"][0]["results"]}
    assert uris == {"my%20kernel.py"}, uris


def test_hardening_a_dangling_symlink_is_reported_under_its_own_name(tmp_path):
    """Issue 27 item 10: a dangling link found in a directory was reported under its missing target's name."""
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "good.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "gone.py")
    proc = run_cli("check", ".", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "link.py:1:1: KL001 [error] cannot read file: it is a symbolic link to" in proc.stdout, proc.stdout
    assert not any(line.startswith("gone.py") for line in proc.stdout.splitlines()), proc.stdout
    proc = run_cli("check", "link.py", cwd=tmp_path)
    assert proc.returncode == 2 and "path does not exist: link.py (a symbolic link to" in proc.stderr


def test_hardening_ctrl_c_stops_the_workers_at_once(tmp_path):
    hang = shutil.copy(FIXTURES / "faults" / "hang.py", tmp_path / "hang.py")
    # As from a terminal: a test run started in the background (`pytest &`) has SIGINT ignored, and its children
    # would inherit that.
    proc = subprocess.Popen([sys.executable, "-m", "kernel_lsp.cli", "check", str(hang), "--no-cache",
                             "--timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    from tests.lsp.rawclient import descendants, kernel_lsp_processes
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the hanging job runs
        if any(kind == "job" for pid, kind in kernel_lsp_processes().items() if pid in descendants(proc.pid)):
            break
        time.sleep(0.1)
    jobs = {p for p in descendants(proc.pid) if kernel_lsp_processes().get(p) == "job"}
    assert jobs
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - start < 10, err
    from tests.lsp.rawclient import wait_gone
    assert wait_gone(jobs, timeout=10)


def test_hardening_output_into_a_closed_pipe_exits_quietly(tmp_path):
    for name in ("bug_relu_drops_nan.py", "bug_add_no_mask.py"):
        shutil.copy(CORPUS / name, tmp_path / name)
    proc = subprocess.run(f"{sys.executable} -m kernel_lsp.cli check {tmp_path} --no-cache | head -c 10",
                          shell=True, capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert len(proc.stdout) == 10 and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


FALLBACK_PROBLEM = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
'''


def test_hardening_a_linked_pytorch_only_file_fails_in_a_folder_as_named_directly(tmp_path):
    """Issue 43 item 1: a folder with a good kernel and a linked `ModelNew` that only calls torch.softmax passed
    (exit 0, the second file skipped without a word)."""
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "good.py")
    write(tmp_path / "problem.py", FALLBACK_PROBLEM)
    write(tmp_path / "softmax_new.py", "# kernel-lsp: reference=problem.py\nimport torch\n\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n")
    findings = {}
    for target, extra in ((tmp_path, ()), (tmp_path, ("--require-reference",)), (tmp_path / "softmax_new.py", ())):
        proc = run_cli("check", str(target), "--format", "json", *extra)
        assert proc.returncode == 1, (target, extra, proc.stdout[-2000:], proc.stderr)
        doc = json.loads(proc.stdout)
        found = [(d["path"].rsplit("/", 1)[-1], d["code"], d["severity"], d["range"]["line"])
                 for d in doc["diagnostics"]]
        assert ("softmax_new.py", "KL205", "error", 0) in found, found
        findings[str(target)] = [f for f in found if f[0] == "softmax_new.py"]
    assert len({tuple(v) for v in findings.values()}) == 1, findings  # the same finding either way
    text = run_cli("check", str(tmp_path)).stdout
    assert "softmax_new.py:1:1: KL205 [error] PyTorch fallback" in text and "All checks passed" not in text


def test_hardening_a_large_file_without_triton_is_skipped_unparsed(tmp_path):
    """Issue 43 item 11: a 43 MB generated module cost 17 s and 3 GB to skip. One over the parse limit that does not
    mention triton is not parsed (its syntax error, planted at the end, is not reported); a small one still is."""
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "good.py")
    (tmp_path / "data.py").write_text("TABLE = [\n" + "    1.0,\n" * 200_000 + "  # never closed\n")
    (tmp_path / "small.py").write_text("def f(:\n")
    proc = run_cli("check", str(tmp_path), "--no-verify")
    assert "small.py:1:7: KL001" in proc.stdout, proc.stdout
    assert "data.py" not in proc.stdout, proc.stdout


def test_hardening_contradicting_flags_are_usage_errors(tmp_path):
    """Issue 43 item 11: each pair was accepted and one of its flags silently ignored."""
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "k.py")
    for flags, says in ((("--device", "cpu", "--gpus", "0"), "--gpus 0 with --device cpu"),
                        (("--executor", "local", "--ray-address", "10.0.0.5:6379"), "with --executor local"),
                        (("--no-verify", "--require-reference"), "--require-reference with --no-verify")):
        proc = run_cli("check", str(tmp_path / "k.py"), *flags)
        assert proc.returncode == 2 and says in proc.stderr and "drop one of them" in proc.stderr, (flags, proc.stderr)
        assert proc.stdout == "" and "Traceback" not in proc.stderr
    # optimize takes --executor and --ray-address as check does (a Ray run of it: tests/run/test_ray.py)
    proc = run_cli("optimize", str(tmp_path / "k.py"), "--mode", "tune", "--executor", "local", "--ray-address",
                   "10.0.0.5:6379")
    assert proc.returncode == 2 and "with --executor local" in proc.stderr and "drop one of them" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_hardening_a_clean_check_logs_each_file_when_stderr_is_not_a_terminal(tmp_path):
    """Issue 43 item 11: a clean check printed nothing for minutes into a CI log (the progress line is for
    terminals only). Now each finished file is one line on stderr; stdout keeps the findings and the summary."""
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "a.py")
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "b.py")
    proc = run_cli("check", str(tmp_path), "--no-cache", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [re.fullmatch(r"kernel-lsp: \[(\d)/2\] done: (\w\.py) \(clean\)  \d+ s", line)
            for line in proc.stderr.splitlines() if "] done: " in line]
    assert len(done) == 2 and all(done), proc.stderr
    assert sorted(m.group(1) for m in done) == ["1", "2"] and sorted(m.group(2) for m in done) == ["a.py", "b.py"]
    assert "done:" not in proc.stdout and "All checks passed" in proc.stdout
