"""Print the Triton code torch.compile generates for some task references (to compare with ours)."""
import importlib.util, sys, torch
from torch._inductor.utils import run_and_get_code
for rel in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("m", rel); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    torch.manual_seed(0)
    model = m.Model(*m.get_init_inputs()).cuda()
    x = [t.cuda() if isinstance(t, torch.Tensor) else t for t in m.get_inputs()]
    torch._dynamo.reset()
    with torch.no_grad():
        _, codes = run_and_get_code(torch.compile(model), *x)
    print("=" * 30, rel)
    for c in codes:
        keep = False
        for line in c.splitlines():
            if line.startswith("@triton") or "triton_heuristics" in line or "def triton_" in line or "def call(" in line:
                keep = True
            if keep:
                print(line)
            if line.startswith("''', device_str"):
                keep = False
