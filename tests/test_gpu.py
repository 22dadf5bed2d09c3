"""GPU tests: run only where torch sees a CUDA device (skipped in CI); results are recorded in docs/."""

import json

import pytest

from tests.conftest import CORPUS, run_cli

# KL208 comes from the CPU interpreter's bounds guard; on a GPU those cases are not expected to match.
GPU_CASES = ["ok_add_fp32.py", "ok_softmax_fp32.py", "ok_matmul_fp16.py", "ok_row_sum_bf16.py",
             "bug_softmax_no_max.py", "bug_relu_drops_nan.py", "bug_grid_too_small.py", "bug_mutates_input.py",
             "bug_pytorch_fallback.py", "bug_silent_fp16_downcast.py", "ok_dropout.py", "bug_dropout_unscaled.py"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CASES)
def test_gpu_corpus_case_gets_same_codes(name):
    proc = run_cli("check", str(CORPUS / name), "--device", "cuda", "--format", "json", "--no-cache", "--no-measure")
    doc = json.loads(proc.stdout)
    import re
    expected = re.search(r"^# expect: (.+)$", (CORPUS / name).read_text(), re.M).group(1).split()
    expected = set() if expected == ["clean"] else set(expected)
    got = {d["code"] for d in doc["diagnostics"] if d["severity"] in ("error", "warning")}
    assert got == expected, [d["message"] for d in doc["diagnostics"]]
    assert doc["files"][0]["stats"]["device"] == "cuda"
