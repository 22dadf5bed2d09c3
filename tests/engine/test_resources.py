"""Resource findings from real cubins compiled without a GPU."""

import shutil

from tests.conftest import CORPUS, FIXTURES, check_json


def test_shared_memory_overflows_one_target_and_fits_another(tmp_path):
    """128x128x64 fp16 tiles with 5 stages: fine on A100 and H100, OutOfResources on an RTX 3090 (sm_86)."""
    shutil.copy(FIXTURES / "resources" / "matmul_5stage.py", tmp_path / "mm.py")
    code, doc = check_json(tmp_path / "mm.py", extra=("--no-cache", "--no-verify", "--target", "sm_80,sm_86,sm_90"))
    assert code == 1
    overflow = [d for d in doc["diagnostics"] if d["code"] == "KL101"]
    assert [d["data"]["target"] for d in overflow] == ["sm_86"]
    assert "OutOfResources" in overflow[0]["message"] and "num_stages=5" in overflow[0]["message"]
    facts = {f["target"]: f for f in doc["files"][0]["kernels"]["_matmul_kernel"]["compile"]}
    assert 99 * 1024 < facts["sm_86"]["shared"] <= 163 * 1024
    assert facts["sm_90"]["shared"] <= 227 * 1024
    assert facts["sm_90"]["registers"] > 0  # read from the cubin with cuobjdump


def test_shared_memory_overflow_on_the_default_target(tmp_path):
    shutil.copy(CORPUS / "bug_smem_overflow_sm90.py", tmp_path / "mm.py")
    code, doc = check_json(tmp_path / "mm.py", extra=("--no-cache", "--no-verify"))
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "KL101"]
    assert code == 1 and d["data"]["target"] == "sm_90" and d["data"]["shared"] > d["data"]["limit"]


def test_resources_reported_for_clean_kernel(tmp_path):
    shutil.copy(CORPUS / "ok_add_fp32.py", tmp_path / "add.py")
    code, doc = check_json(tmp_path / "add.py", extra=("--no-cache", "--no-verify", "--target", "sm_80,sm_90,sm_100"))
    assert code == 0
    facts = doc["files"][0]["kernels"]["_add_kernel"]["compile"]
    assert [f["target"] for f in facts] == ["sm_80", "sm_90", "sm_100"]
    assert all(f["ok"] and f["registers"] and f["spill_bytes"] == 0 for f in facts)
