"""Static instruction counts of a task kernel and its candidate, compiled for sm_90 here (no GPU) exactly as their
launches at the task's own size would compile them: global loads and stores by width, registers, spills.
A proxy to choose what to time on a GPU, not a measurement of speed.
    python benchmarks/cand11/sass_counts.py"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

import torch
import triton

from kernel_lsp.player.capture import build_spec
from kernel_lsp.player.compiler import ast_source, cuobjdump_path
from triton.backends.compiler import GPUTarget

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(rel):
    spec = importlib.util.spec_from_file_location(os.path.basename(rel)[:-3], os.path.join(ROOT, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sass_of(fn, args, kwargs):
    spec, _ = build_spec(fn.fn, fn.fn.__name__, args, kwargs)
    kernel = triton.compile(ast_source(fn, spec), target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": spec.num_warps, "num_stages": spec.num_stages})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        sass = subprocess.run([cuobjdump_path(), "-sass", f.name], capture_output=True, text=True).stdout
        res = subprocess.run([cuobjdump_path(), "-res-usage", f.name], capture_output=True, text=True).stdout
    ops = Counter(m.group(1) for m in re.finditer(r"\b((?:LDG|STG|LDS|STS|LDGSTS|HGMMA|HMMA|UTMALDG|UTMASTG|UTMAPF)[\w.]*)", sass))
    return ops, re.findall(r"REG:\d+|STACK:\d+|SHARED:\d+|LOCAL:\d+", res)


def recorded_launches(mod, ref, *, inputs=None):
    """Runs the candidate's forward on CPU tensors of the task's size with its kernels' launches recorded, not
    run: returns (kernel, args, kwargs) per launch."""
    launches = []

    class Recorder:
        def __init__(self, fn):
            self.fn = fn

        def __getitem__(self, grid):
            return lambda *a, **k: launches.append((self.fn, a, k))

    source = open(mod.__file__).read()
    for name, value in list(vars(mod).items()):
        if isinstance(value, triton.runtime.jit.JITFunction) and f"{name}[" in source:  # launched, not only called
            setattr(mod, name, Recorder(value))
    model = mod.ModelNew(*ref.get_init_inputs())
    with torch.no_grad():
        try:
            model(*(inputs or ref.get_inputs()))
        except Exception:
            pass  # the output of an unrun kernel may be consumed afterwards
    return launches


def main(pairs):
    for ref_rel, files in pairs:
        ref = load(ref_rel)
        torch.manual_seed(0)
        inputs = ref.get_inputs()
        for rel in files:
            for fn, args, kwargs in recorded_launches(load(rel), ref, inputs=inputs):
                ops, res = sass_of(fn, args, kwargs)
                print(f"{rel} {fn.fn.__name__} warps={kwargs.get('num_warps', 4)}: {dict(sorted(ops.items()))} {res}")


if __name__ == "__main__":
    main([
        ("tasks/Convolution/depthwise_conv2d.py",
         ["tasks/Convolution/depthwise_conv2d_triton.py"]),
        ("tasks/Convolution/pointwise_conv2d.py",
         ["tasks/Convolution/pointwise_conv2d_triton.py"]),
    ])
