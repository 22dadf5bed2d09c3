"""Where findings land and what they name (issue "verifier", placement)."""

import json

from tests.conftest import CORPUS, corpus_file, run_cli


def test_messages_a_layout_failure_names_the_input_whose_layout_matters(corpus_local):
    report = corpus_file(corpus_local, "bug_bias_assumed_contiguous.py")  # the session's check of the corpus
    (f,) = [f for f in report["findings"] if f["code"] == "KL200"]
    assert "input 1 alone non-contiguous fails too: the kernel assumes input 1 is contiguous" in f["message"]
    assert f["data"]["layout_inputs"] == [1]


def test_messages_two_causes_at_one_store_are_two_findings(corpus_local):
    """Issue 16 item 2: a stride bug must not ride inside a value finding as "also on: strided"."""
    report = corpus_file(corpus_local, "bug_half_sum_and_strides.py")  # the session's check of the corpus
    found = [f for f in report["findings"] if f["code"] == "KL200"]
    by_first = {f["data"]["variants"][0]: f for f in found}
    assert set(by_first) == {"seed-1", "transposed", "odd-size"}, [f["message"] for f in found]  # values, layout, size
    assert not {"strided", "odd-size"} & set(by_first["seed-1"]["data"]["variants"])
    assert "inputs 0 and 1 each fail alone non-contiguous" in by_first["transposed"]["message"]


def test_messages_a_failing_autotune_config_is_named(corpus_local):
    """Issue 16 item 1: the configs this run did not pick are verified too, and the finding names them."""
    report = corpus_file(corpus_local, "bug_autotune_config_tail.py")  # the session's check of the corpus
    (f,) = [f for f in report["findings"] if f["code"] == "KL203"]
    assert f["message"].startswith("_scale_kernel autotune config 3 of 4 (BLOCK=128, VEC=2, num_warps=4"), f["message"]
    assert "488 of 1000 elements" in f["message"] and set(f["data"]["variants"]) == {"config-3", "config-3-odd"}


def test_messages_each_kernel_of_a_dispatch_is_verified_by_the_variants_it_ran_on(corpus_local):
    """Whole blocks at the problem's own size, a masked kernel at the CPU's odd sizes: the aligned-size variant
    gives the whole-block path a run on the CPU, and each variant row names the kernel it ran."""
    report = corpus_file(corpus_local, "ok_dispatch_own_sizes.py")  # the session's check of the corpus
    assert not [f for f in report["findings"] if f["code"] == "KL104"]
    (aligned,) = report["kernels"]["_scale_whole_blocks"]["verification"]["variants"]
    assert aligned["variant"] == "aligned-size" and aligned["kernels"] == ["_scale_whole_blocks"], aligned
    rows = report["kernels"]["_scale_masked"]["verification"]["variants"]
    assert len(rows) > 5 and all(r["kernels"] == ["_scale_masked"] for r in rows)


def test_messages_a_kernel_only_the_problems_own_sizes_reach_is_not_called_verified(tmp_path):
    """A path taken above a size threshold the CPU never reaches stays unverified there, and says so."""
    src = (CORPUS / "ok_dispatch_own_sizes.py").read_text()
    src = src.replace("if n % BLOCK == 0:", "if n >= 1 << 20 and n % BLOCK == 0:")
    path = tmp_path / "threshold.py"
    path.write_text(src)
    proc = run_cli("check", str(path), "--no-cache", "--format", "json")
    report = json.loads(proc.stdout)["files"][0]
    (f,) = [f for f in report["findings"] if f["code"] == "KL104"]
    assert f["severity"] == "info" and f["range"]["line"] == 12, f  # the kernel's def
    assert f["message"].startswith("kernel _scale_whole_blocks ran on the problem's own inputs, but none of the "
                                   "verification's inputs took its path (_scale_masked ran instead)"), f["message"]
    assert report["kernels"]["_scale_whole_blocks"].get("verification") is None
    text = run_cli("check", str(path), "--no-cache").stdout
    assert "2 kernels (1 verified, 1 not verified" in text and "All checks passed" not in text


def test_messages_a_size_knob_the_reference_reads_when_called_moves_with_its_inputs(tmp_path):
    """ROWS sizes both the indices the input factory draws and the reference's output: a variant at another ROWS
    must give the reference that ROWS too. Before, the larger-size variant drew indices up to 2 ROWS for a
    reference with ROWS rows (an IndexError here, skipped silently; a device-side assert on a GPU, which ended the
    whole check with KL105)."""
    src = (CORPUS / "ok_index_add_no_float64.py").read_text().replace("N, D, ROWS = 400, 48, 16",
                                                                       "N, D, ROWS = 64, 16, 16")
    path = tmp_path / "scatter.py"
    path.write_text(src)
    proc = run_cli("check", str(path), "--no-cache", "--format", "json")
    doc = json.loads(proc.stdout)
    assert not [d for d in doc["diagnostics"] if d["severity"] in ("error", "warning")], doc["diagnostics"]
    rows = {r["variant"]: r for r in doc["files"][0]["kernels"]["_scatter_rows_kernel"]["verification"]["variants"]}
    assert rows["larger-size"]["verdict"] == "ok" and rows["larger-size"]["inputs"] == "(129, 33), (129,)", rows.keys()
    assert not doc["files"][0]["kernels"]["_scatter_rows_kernel"]["verification"].get("skipped"), doc["files"][0]


def test_messages_a_wrong_reduction_axis_says_its_finite_elements_are_wrong_and_leads_with_the_problems_inputs(corpus_local):
    """A softmax summed down the columns: the block of padded rows is NaN, every finite element is wrong (up to tens
    of times the truth). The finding used to be only "N elements disagree on NaN/inf", led by a layout variant; it
    says the finite elements' error too, and the finding on the problem's own inputs comes first."""
    report = corpus_file(corpus_local, "bug_softmax_wrong_axis.py")  # the session's check of the corpus
    found = report["findings"]
    assert found and all(f["code"] == "KL201" for f in found), [f["message"] for f in found]
    assert "seed-1" in found[0]["data"]["variants"], [f["data"]["variants"] for f in found]
    assert "disagree on NaN/inf; the finite elements are wrong too: output[" in found[0]["message"]
    assert "out of budget" in found[0]["message"]
