"""Compile every sweep config of benchmarks/cand13/families.py for sm_90 here (no GPU), at the task's own size, and
print its shared memory (the H200 allows 232448 bytes per block), registers and spills, and its TMA/wgmma counts.
Run it with Triton 3.6 on the path to check what the GPU's Triton builds:
    python benchmarks/cand13/smem_check.py"""
import ast
import os
import sys

import torch
import triton
from triton.backends.compiler import GPUTarget

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cand11"))

from sass_counts import load, recorded_launches, sass_of  # noqa: E402
from kernel_lsp.engine.capture import build_spec  # noqa: E402
from kernel_lsp.engine.compile import ast_source  # noqa: E402

LIMIT = 232448


def configs(name):
    """The config list `name` from families.py, read without importing sweep (no GPU needed)."""
    tree = ast.parse(open(os.path.join(HERE, "families.py")).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == name:
            return ast.literal_eval(node.value)


def main():
    print("triton", triton.__version__)
    for rel, ref_rel, names, cfgs in [
            ("benchmarks/cand13/pointwise_tma_dev_triton.py", "tasks/Convolution/pointwise_conv2d.py",
             ["TM", "TN", "TK", "TWARPS", "TSTAGES"], configs("PW_CONFIGS")),
            ("benchmarks/cand13/bmm_tma_triton.py", "tasks/LinearAlgebra/bmm.py",
             ["BM", "BN", "BK", "GROUP", "WARPS", "STAGES", "SUB"], configs("BMM_CONFIGS"))]:
        ref = load(ref_rel)
        torch.manual_seed(0)
        inputs = ref.get_inputs()
        for cfg in cfgs:
            mod = load(rel)
            for n, v in zip(names, cfg):
                setattr(mod, n, v)
            launches = recorded_launches(mod, ref, inputs=inputs)
            fn, args, kwargs = launches[0]
            try:
                spec, _ = build_spec(fn.fn, fn.fn.__name__, args, kwargs)
                k = triton.compile(ast_source(fn, spec), target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": spec.num_warps, "num_stages": spec.num_stages})
                ops, res = sass_of(fn, args, kwargs)
                keep = {o: c for o, c in ops.items() if o.startswith(("UTMA", "HGMMA"))}
                flag = "OK" if k.metadata.shared <= LIMIT else "TOO BIG"
                print(f"{os.path.basename(rel)} {cfg} {fn.fn.__name__}: shared {k.metadata.shared} {flag}, "
                      f"scratch {getattr(k.metadata, 'global_scratch_size', '?')} {res} {keep}", flush=True)
            except Exception as ex:
                print(f"{os.path.basename(rel)} {cfg}: FAILED {type(ex).__name__}: {str(ex)[:300]}", flush=True)


if __name__ == "__main__":
    main()
