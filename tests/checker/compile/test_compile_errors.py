"""Compile errors land on the exact line and column of the offending expression, for several error kinds."""

import json
import re

import pytest

from tests.conftest import FIXTURES, check_json

CASES = sorted(p.name for p in (FIXTURES / "compile_errors").glob("*.py"))
EXPECTED_MESSAGES = {
    "undefined_name.py": "scale_factor is not defined",
    "arange_not_pow2.py": "power of 2",
    "unsupported_try.py": "unsupported AST node type: Try",
    "static_assert.py": "BLOCK must be at least 1024",
    "shape_mismatch.py": "incompatible dimensions",
    "helper_error.py": "undefined_in_helper is not defined",
    # The interpreter runs such a kernel; the compiler's decorator refuses it (it was an internal error, KL900).
    "kwargs_parameter.py": "JIT functions do not support **options parameters",
}


@pytest.fixture(scope="module")
def report():
    _, doc = check_json(FIXTURES / "compile_errors", extra=("--no-cache", "--no-verify", "--target", "sm_80,sm_90"))
    return {d["path"].rsplit("/", 1)[-1]: d for d in doc["diagnostics"]}


def _marker(name: str) -> tuple[int, int]:
    lines = (FIXTURES / "compile_errors" / name).read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"# ERR (.+)$", line)
        if m:
            return i, line.index(m.group(1).strip())
    raise AssertionError(f"{name} has no # ERR marker")


def test_compile_errors_cover_seven_kinds():
    assert set(CASES) == set(EXPECTED_MESSAGES)


@pytest.mark.parametrize("name", CASES)
def test_compile_error_position_and_message(report, name):
    d = report[name]
    line, col = _marker(name)
    assert d["code"] == "KL100" and d["severity"] == "error"
    assert (d["range"]["line"], d["range"]["col"]) == (line, col), d
    assert EXPECTED_MESSAGES[name] in d["message"]
    assert "sm_80" in d["message"] and "sm_90" in d["message"]  # one finding names every failing target


def test_a_kernel_that_reduces_compiles_after_the_interpreter_ran_it_on_a_fresh_triton_cache(tmp_path):
    """The variants run under the CPU interpreter before the compile for the targets, in one worker. Triton 3.9's
    interpreter left `triton.language` patched after a kernel called a jit helper (`tl.max` and `tl.sum` are
    such), so the compile built with the interpreter's builder: every reducing kernel was a false KL100 ("'value'
    object has no attribute 'dtype'") on a machine whose Triton cache did not hold it already."""
    from tests.conftest import CORPUS, run_cli
    proc = run_cli("check", str(CORPUS / "ok_softmax_fp32.py"), "--no-cache", "--format", "json", "--device", "cpu",
                   env={"TRITON_CACHE_DIR": str(tmp_path / "triton-cache")})
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and not doc["diagnostics"], doc["diagnostics"]
    assert any((tmp_path / "triton-cache").rglob("*.cubin"))  # compiled here, not taken from a cache
