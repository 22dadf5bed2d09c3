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


def test_an_autotune_config_over_the_limit_is_advice_when_another_fits(tmp_path):
    """The CPU's autotuner runs the first config, which needs 384 KiB on sm_90; the autotuner there skips it and runs
    the next, so it is information, not a KL101 error (issue 30 item 10). With no config that fits it stays an
    error."""
    shutil.copy(CORPUS / "ok_autotune_first_config_too_big.py", tmp_path / "mm.py")
    code, doc = check_json(tmp_path / "mm.py", extra=("--no-cache", "--no-verify"))
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "KL101"]
    assert code == 0 and d["severity"] == "info" and "the autotuner will skip this config" in d["message"], d
    text = (tmp_path / "mm.py").read_text().replace('{"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=2',
                                                    '{"BM": 256, "BN": 256, "BK": 64}, num_warps=8, num_stages=4')
    (tmp_path / "mm.py").write_text(text)
    code, doc = check_json(tmp_path / "mm.py", extra=("--no-cache", "--no-verify"))
    assert code == 1 and "error" in {d["severity"] for d in doc["diagnostics"] if d["code"] == "KL101"}
