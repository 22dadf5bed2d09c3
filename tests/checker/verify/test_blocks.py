"""Sizes from the kernels' own block constants (kernel_lsp/checker/verify/plan/blocks.py): every loop twice, every grid several
programs, on the CPU's small sizes and on tiny literal inputs."""

from types import SimpleNamespace

from kernel_lsp.checker.verify.plan.blocks import fixed_blocks, past_blocks
from tests.conftest import corpus_file


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


def test_blocks_a_loop_over_column_blocks_runs_three_times_on_the_cpu(corpus_local):
    """The CPU shrank a 64 x 8192 scan to 63 x 255, below one block of 1024: a running total dropped between blocks
    passed there and failed on the GPU (issue 30 item 1). The block-size variant takes the columns past two blocks,
    with few rows."""
    report = corpus_file(corpus_local, "bug_scan_drops_carry.py")  # the session's check of the corpus
    rows = {r["variant"]: r for k in report["kernels"].values() for r in k["verification"]["variants"]}
    assert rows["block-size-1"]["inputs"] == "(3, 2561)" and rows["block-size-1"]["verdict"] == "KL200"
    assert rows["own-rows"]["inputs"] == "(7, 8192)" and rows["own-rows"]["verdict"] == "KL200"  # the problem's rows
    assert all(r["verdict"] == "ok" for name, r in rows.items() if name not in ("block-size-1", "own-rows"))
    (f,) = [f for f in report["findings"] if f["code"] == "KL200"]
    assert "at shape (7, 8192)" in f["message"] and "also on: block-size-1" in f["message"], f["message"]


def test_blocks_a_persistent_kernels_costly_block_variant_is_stopped_and_the_kernel_not_verified(corpus_local):
    """A persistent kernel launches a few programs whatever the size, so the dry run's program count lets every
    block-size variant through, and at 2561 rows its 4 programs walk 2561 rows of a 96-term polynomial (a conv1d of
    this form ran 65 s there, past the check's timeout). The variant is stopped at 4 times the operations of the
    first variant's run and the kernel is reported not verified, saying why: no error, and no verified verdict
    that rests on a variant that did not run."""
    report = corpus_file(corpus_local, "ok_persistent_polyval.py")  # the session's check of the corpus
    assert not [f for f in report["findings"] if f["severity"] in ("error", "warning")], report["findings"]
    (kernel,) = report["kernels"].values()
    assert "verification" not in kernel, kernel
    (note,) = [f for f in report["findings"] if f["code"] == "KL104"]
    assert "block-size" in note["message"] and "stopped after" in note["message"], note


def test_blocks_a_kernel_that_spends_operations_where_its_bug_shows_is_never_verified(corpus_local):
    """The budget's stop is no hiding place: a row sum that drops its running total between blocks and spins
    only past one block (where the block-size variant would catch it) is stopped there and reported not verified;
    before the budget it failed that variant (KL200), and it must never come out verified."""
    report = corpus_file(corpus_local, "bug_spins_past_budget.py")  # the session's check of the corpus
    assert not [k for k in report["kernels"].values() if "verification" in k], report["kernels"]
    assert any(f["code"] == "KL104" and "stopped after" in f["message"] for f in report["findings"])
