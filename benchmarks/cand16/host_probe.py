"""Host issue time per call (the GPU idle before each call: synchronize, then the host clock around the call alone)
and back-to-back time, of the implementation, eager and torch.compile, in a plain process: against the host times
`kernel-lsp check --device cuda` reports (measure.host_us), to see whether the checking process adds to them.
Usage: python benchmarks/cand16/host_probe.py TASK_TRITON.py ..."""
import importlib.util, os, sys, time
import torch

_spec = importlib.util.spec_from_file_location(
    "sweep", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cand11", "sweep.py"))
_sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sweep)
b2b, load, setup = _sweep.b2b, _sweep.load, _sweep.setup


def host_us(fn, n=40):
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return sorted(out)[n // 2]


for path in sys.argv[1:]:
    text = open(path).read()
    ref_rel = text.split("reference=", 1)[1].split()[0]
    ref = load(os.path.join(os.path.dirname(path), ref_rel), "ref_" + os.path.basename(path))
    mod = load(path, "impl_" + os.path.basename(path))
    _, model, new, inputs, copies = setup(ref, mod, 1)
    comp = torch.compile(model)
    row = []
    with torch.no_grad():
        for name, f in (("triton", new), ("eager", model), ("compile", comp)):
            for _ in range(3):
                f(*inputs)
            h = host_us(lambda: f(*inputs))
            w = b2b([(lambda c=c: f(*c)) for c in copies])
            row.append(f"{name} host {h:.1f} b2b {w:.1f}")
    print(f"{os.path.basename(path)}: " + "; ".join(row), flush=True)
