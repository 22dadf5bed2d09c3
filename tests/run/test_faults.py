"""User code that crashes or hangs becomes a diagnostic; the check goes on with the other files."""

import json
import shutil

import pytest

from tests.conftest import CORPUS, FIXTURES, run_cli


@pytest.mark.parametrize("warm", ["1", "0"], ids=["warm-workers", "cold-workers"])
def test_crashing_and_hanging_files_become_diagnostics(tmp_path, warm):
    for name in ("segfault.py", "abort.py", "hang.py"):
        shutil.copy(FIXTURES / "faults" / name, tmp_path / name)
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "good.py")
    proc = run_cli("check", str(tmp_path), "--format", "json", "--no-cache", "--timeout", "20",
                   env={"KERNEL_LSP_WARM": warm})
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    by_file = {f["path"].rsplit("/", 1)[-1]: f["findings"] for f in doc["files"]}
    (seg,) = by_file["segfault.py"]
    assert seg["code"] == "KL300" and "SIGSEGV" in seg["message"] and "capture" in seg["message"]
    assert seg["range"]["line"] == 0  # the pragma line that links the file
    (abort,) = by_file["abort.py"]
    assert abort["code"] == "KL300" and "SIGABRT" in abort["message"]
    (hang,) = by_file["hang.py"]
    assert hang["code"] == "KL301" and "timed out" in hang["message"]
    assert by_file["good.py"] == []  # the other file was still checked, and is clean
    assert doc["stats"]["warm_workers"] == (4 if warm == "1" else 0)
