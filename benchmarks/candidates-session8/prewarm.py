"""Experiment: torch.compile a KernelBench reference once, to fill Inductor's and Triton's on-disk caches."""
import importlib.util, sys, time
t0 = time.time()
import torch
spec = importlib.util.spec_from_file_location("ref", sys.argv[1]); ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
torch.set_default_device("cuda")
torch.manual_seed(0)
m = ref.Model(*ref.get_init_inputs())
x = ref.get_inputs()
with torch.no_grad():
    torch.compile(m)(*x)
torch.cuda.synchronize()
print(f"prewarm {sys.argv[1]} {time.time() - t0:.2f} s", file=sys.stderr)
