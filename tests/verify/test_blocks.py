"""Sizes from the kernels' own block constants (kernel_lsp/engine/blocks.py): every loop twice, every grid several
programs, on the CPU's small sizes and on tiny literal inputs."""

from types import SimpleNamespace

from kernel_lsp.engine.blocks import fixed_blocks, past_blocks
from tests.conftest import CORPUS, check_json


def _launch(kernel, **constexprs):
    return SimpleNamespace(spec=SimpleNamespace(name=kernel, constexprs=constexprs))


def test_blocks_are_constants_that_kept_one_value_whatever_the_size():
    """BLOCK=1024 on every launch is a block a loop walks; a BLOCK that followed next_power_of_2(n) is not, nor is
    a flag or a non-power-of-two constant."""
    launches = [_launch("scan", BLOCK=1024, ROWS_PER=4, EVEN=True, K=3), _launch("scan", BLOCK=1024, ROWS_PER=4,
                                                                                 EVEN=True, K=3),
                _launch("softmax", BLOCK=8192), _launch("softmax", BLOCK=256)]
    assert fixed_blocks(launches) == {1024: ["BLOCK"], 4: ["ROWS_PER"]}
    assert past_blocks(1024) == 2561 and past_blocks(1024) % 1024 and past_blocks(1024) // 1024 == 2


def test_blocks_a_loop_over_column_blocks_runs_three_times_on_the_cpu():
    """The CPU shrank a 64 x 8192 scan to 63 x 255, below one block of 1024: a running total dropped between blocks
    passed there and failed on the GPU (issue 30 item 1). The block-size variant takes the columns past two blocks,
    with few rows."""
    _, doc = check_json(CORPUS / "bug_scan_drops_carry.py", extra=("--no-cache",))
    (report,) = doc["files"]
    rows = {r["variant"]: r for k in report["kernels"].values() for r in k["verification"]["variants"]}
    assert rows["block-size-1"]["inputs"] == "(3, 2561)" and rows["block-size-1"]["verdict"] == "KL200"
    assert all(r["verdict"] == "ok" for name, r in rows.items() if name != "block-size-1")
    (f,) = [f for f in report["findings"] if f["code"] == "KL200"]
    assert "at shape (3, 2561)" in f["message"]


def test_blocks_a_persistent_kernels_costly_block_variant_is_stopped_and_skipped():
    """A persistent kernel launches a few programs whatever the size, so the dry run's program count lets every
    block-size variant through, and at 2561 rows its 4 programs walk 2561 rows of a 96-term polynomial (a conv1d of
    this form ran 65 s there, past the check's timeout). The variant is stopped at 4 times the operations of the
    first run at the verification's sizes and reported skipped; the others, columns past two blocks among them,
    still run, and the file passes."""
    _, doc = check_json(CORPUS / "ok_persistent_polyval.py", extra=("--no-cache",))
    (report,) = doc["files"]
    assert not [f for f in report["findings"] if f["severity"] in ("error", "warning")], report["findings"]
    (kernel,) = report["kernels"].values()
    rows = {r["variant"]: r for r in kernel["verification"]["variants"]}
    skipped = {s["variant"]: s["reason"] for s in kernel["verification"]["skipped"]}
    stopped = [name for name, reason in skipped.items() if reason.startswith("stopped after")]
    assert stopped and all(name.startswith("block-size") for name in stopped), skipped
    assert any(r["inputs"].startswith("(3, 2561)") and r["verdict"] == "ok" for r in rows.values()), rows
