"""tasks/index.json is complete, current, and covers KernelBench-X's 15 categories with at least 3 tasks each."""

import json
from collections import Counter

from tests.conftest import ROOT

TASKS = ROOT / "tasks"
CATEGORIES = {"Activation", "Convolution", "Fusion", "Index", "LinearAlgebra", "Loss", "Math", "MatrixMultiply",
              "Normalization", "Optimizer", "Pooling", "Quantization", "Random", "Reduce", "SpatialOps"}


def test_tasks_index_covers_all_categories():
    tasks = json.loads((TASKS / "index.json").read_text())["tasks"]
    counts = Counter(t["category"] for t in tasks)
    assert set(counts) == CATEGORIES and min(counts.values()) >= 3 and len(tasks) >= 45
    for t in tasks:
        assert (TASKS / t["reference"]).is_file() and (TASKS / t["implementation"]).is_file()
        assert t["dtype"] and t["bytes"] > 0 and t["flops"] >= 0
    listed = {t["implementation"] for t in tasks}
    on_disk = {p.relative_to(TASKS).as_posix() for p in TASKS.glob("*/*_triton.py")}
    assert listed == on_disk


def test_tasks_quantization_and_random_contracts():
    tasks = json.loads((TASKS / "index.json").read_text())["tasks"]
    quant = {t["dtype"] for t in tasks if t["category"] == "Quantization"}
    assert {"int8", "float8_e4m3fn"} <= quant
    for t in tasks:
        if t["category"] == "Random":
            assert "KERNEL_LSP_RANDOM = True" in (TASKS / t["reference"]).read_text()
