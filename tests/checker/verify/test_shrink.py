"""A failure is shrunk as property-based testing shrinks a failing example: its variant re-run at smaller sizes,
kept while it still fails with the same code; the finding names the smallest failing inputs found."""

from tests.conftest import CORPUS


def _finding(doc: dict, case: str, code: str) -> dict:
    report = next(f for f in doc["files"] if f["path"] == str((CORPUS / case).resolve()))
    return next(f for f in report["findings"] if f["code"] == code)


def test_shrink_names_the_smallest_failing_inputs(corpus_local):
    _, doc = corpus_local
    # sizes read from the inputs (no knob): every dimension of one size moves together
    l2 = _finding(doc, "bug_l2norm_no_eps.py", "KL201")
    rows, cols = (int(n) for n in l2["data"]["shrunk"].strip("()").split(", "))
    assert rows * cols < 64 * 96 and f"the smallest failing inputs found: {l2['data']['shrunk']}" in l2["message"]
    # a batch of one: the columns shrink to one too, the batch stays at one
    linear = _finding(doc, "kb_linear_batch_of_one_bug/impl.py", "KL200")
    assert linear["data"]["shrunk"].startswith("(1, 1)")
    # an out-of-bounds read on a vector: one element is enough
    oob = _finding(doc, "bug_add_no_mask.py", "KL208")
    assert oob["data"]["shrunk"].startswith("(1,)")


def test_shrink_keeps_only_sizes_that_still_fail(corpus_local):
    """A model's first-call grid is wrong only past the size it was first called at: the shrunk input is still
    larger than that (63 x 191 elements on the CPU)."""
    _, doc = corpus_local
    grid = _finding(doc, "kb_grid_kept_from_first_call/impl.py", "KL203")
    rows, cols = (int(n) for n in grid["data"]["shrunk"].strip("()").split(", "))
    assert 63 * 191 < rows * cols < 31 * 1536
