"""Where findings land and what they name (issue "verifier", placement)."""

import json

from tests.conftest import CORPUS, run_cli


def test_messages_a_layout_failure_names_the_input_whose_layout_matters():
    proc = run_cli("check", str(CORPUS / "bug_bias_assumed_contiguous.py"), "--no-cache", "--format", "json")
    (f,) = [f for f in json.loads(proc.stdout)["files"][0]["findings"] if f["code"] == "KL200"]
    assert "input 1 alone non-contiguous fails too: the kernel assumes input 1 is contiguous" in f["message"]
    assert f["data"]["layout_inputs"] == [1]
