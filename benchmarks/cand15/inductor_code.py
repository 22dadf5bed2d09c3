"""Write the Triton code torch.compile (Inductor) generates for the named tasks' references into one file, to read
how its kernels differ from ours where it is as fast or faster (issue 28). Usage: inductor_code.py OUT NAME...
(NAME as in tasks/index.json). Needs a CUDA GPU."""
import importlib.util, json, os, sys
import torch
from torch._inductor.utils import run_and_get_code

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(out, names):
    index = {t["name"]: t for t in json.load(open(os.path.join(ROOT, "tasks", "index.json")))["tasks"]}
    with open(out, "w") as f:
        for name in names:
            path = os.path.join(ROOT, "tasks", index[name]["reference"])
            spec = importlib.util.spec_from_file_location("ref_" + name, path)
            ref = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(ref)
            torch.manual_seed(0)
            model = ref.Model(*ref.get_init_inputs()).cuda()
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
            torch._dynamo.reset()
            with torch.no_grad():
                _, codes = run_and_get_code(torch.compile(model), *inputs)
            f.write(f"\n\n######## {name}\n")
            for code in codes:
                f.write(code)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
