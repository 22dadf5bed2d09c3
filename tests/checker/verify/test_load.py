"""A verdict must not depend on how busy the machine is.

CPU sizes shrink after a costly variant; that decision once used wall time, then CPU time, so on a loaded
machine the fp16-accumulation case (rows of 4096) had its rows halved and its bug hid. It now counts the
interpreter's operations, which no load changes. Three copies checked at once on 2 cores (beside the other CI tests)
stretch the wall time; every copy must still be caught at full row length, with the same operation count.
"""

import shutil

from tests.conftest import CORPUS, check_json


def test_verdicts_hold_when_the_machine_is_loaded(tmp_path):
    for i in range(3):
        shutil.copy(CORPUS / "bug_fp16_accumulation.py", tmp_path / f"copy{i}.py")
    # A generous timeout: the verdict, not the wall time, is what must not change with the load (CI runs this beside
    # other tests, so three 30-second checks share two cores with them).
    _, doc = check_json(tmp_path, extra=("--no-cache", "--jobs", "3", "--timeout", "400"))
    ops = set()
    for f in doc["files"]:
        (facts,) = f["kernels"].values()
        ops.add(facts["verification"]["first_variant_ops"])
        assert [x["code"] for x in f["findings"]] == ["KL200"], (f["path"], facts["verification"]["cpu_sizes"],
                                                                 facts["verification"]["first_variant_cpu_seconds"])
        assert facts["verification"]["cpu_sizes"] == {}  # the problem's own sizes: rows not shortened
    assert len(ops) == 1 and ops != {0}  # counted, and the same for every copy whatever the load
