"""Regenerate tasks/index.json and the table in tasks/README.md: `python tasks/make_index.py`.

For each `<name>_triton.py` the reference is the file its pragma names. dtype, bytes (inputs plus outputs) and
flops are measured at the task's large shape on torch's meta device, so nothing is allocated; bytes count
inputs, outputs and the model's parameters and buffers once each (the compulsory traffic).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
CATEGORIES = ["Activation", "Convolution", "Fusion", "Index", "LinearAlgebra", "Loss", "Math", "MatrixMultiply",
              "Normalization", "Optimizer", "Pooling", "Quantization", "Random", "Reduce", "SpatialOps"]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_task_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nbytes(values) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(_nbytes(v) for v in values)
    return 0


def _dtype(ref, inputs, outputs) -> str:
    if "quant" in ref.__name__ or "Quantization" in getattr(ref, "__file__", ""):
        outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        low = [o.dtype for o in outs if isinstance(o, torch.Tensor) and o.element_size() == 1]
        if low:
            return str(low[0]).replace("torch.", "")
    for x in list(inputs) + ([outputs] if isinstance(outputs, torch.Tensor) else list(outputs or [])):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return str(x.dtype).replace("torch.", "")
    return "float32"


def task_entry(impl: Path) -> dict:
    ref_rel = re.search(r"#\s*kernel-lsp:\s*reference=(\S+)", impl.read_text()).group(1)
    ref_path = (impl.parent / ref_rel).resolve()
    ref = _load(ref_path)
    with torch.device("meta"):
        torch.manual_seed(0)
        inputs = ref.get_inputs()
        model = ref.Model(*ref.get_init_inputs())
        try:
            outputs = model(*inputs)
        except Exception:
            outputs = None
    return {
        "name": impl.stem.removesuffix("_triton"),
        "category": impl.parent.name,
        "reference": ref_path.relative_to(HERE).as_posix(),
        "implementation": impl.relative_to(HERE).as_posix(),
        "dtype": _dtype(ref, inputs, outputs),
        "flops": int(ref.flops()),
        "bytes": _nbytes(inputs) + _nbytes(outputs) + _nbytes(list(model.parameters()) + list(model.buffers())),
        "summary": (ref.Model.__doc__ or "").strip().split("\n")[0],
    }


def main() -> int:
    tasks = [task_entry(p) for c in CATEGORIES for p in sorted((HERE / c).glob("*_triton.py"))]
    (HERE / "index.json").write_text(json.dumps({"tasks": tasks}, indent=2) + "\n")
    # Speedups are not copied here: docs/benchmarks.md is their one source, with their intervals and versions.
    lines = ["| category | task | dtype | GFLOP | MB moved | what |", "| --- | --- | --- | --- | --- | --- |"]
    for t in tasks:
        lines.append(f"| {t['category']} | [{t['name']}]({t['implementation']}) | {t['dtype']} | "
                     f"{t['flops'] / 1e9:.3g} | {t['bytes'] / 1e6:.4g} | {t['summary']} |")
    readme = HERE / "README.md"
    text = readme.read_text() if readme.exists() else ""
    start, end = "<!-- table:start -->", "<!-- table:end -->"
    table = start + "\n" + "\n".join(lines) + "\n" + end
    text = re.sub(re.escape(start) + ".*" + re.escape(end), table, text, flags=re.S) if start in text else text + table + "\n"
    readme.write_text(text)
    print(f"{len(tasks)} tasks in {len({t['category'] for t in tasks})} categories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
