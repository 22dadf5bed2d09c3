"""How long torch.compile's first call of a task reference takes in a fresh process: cold caches, caches warmed
by another process (autotune results not kept), and with compile_threads=1."""
import importlib.util, json, os, shutil, subprocess, sys, tempfile, time

def child(path, warm):
    t0 = time.perf_counter()
    import torch, torch._dynamo
    if warm:
        import torch._inductor.config as ic
        ic.autotune_local_cache = False
    spec = importlib.util.spec_from_file_location("ref", path)
    ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
    torch.manual_seed(0)
    m = ref.Model(*ref.get_init_inputs()).cuda().eval()
    xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
    torch.set_grad_enabled(False)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    c = torch.compile(m)
    c(*xs); torch.cuda.synchronize()
    t2 = time.perf_counter()
    from torch._dynamo.utils import counters
    print(json.dumps({"setup": round(t1 - t0, 2), "compile": round(t2 - t1, 2),
                      "inductor": {k: v for k, v in counters["inductor"].items() if "cache" in k},
                      "aot": {k: v for k, v in counters["aot_autograd"].items() if "cache" in k}}), flush=True)

def run(path, warm=False, env_extra=None, dirs=None):
    env = dict(os.environ, **(env_extra or {}), TORCHINDUCTOR_CACHE_DIR=dirs[0], TRITON_CACHE_DIR=dirs[1])
    t = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "child", path, "1" if warm else "0"], env=env, capture_output=True, text=True)
    return (p.stdout.strip().splitlines() or [p.stderr[-500:]])[-1], round(time.perf_counter() - t, 2)

if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3] == "1"); sys.exit()
    for path in sys.argv[1:]:
        for trial in range(2):
            d = [tempfile.mkdtemp(), tempfile.mkdtemp()]
            print(path, "cold", *run(path, dirs=d), flush=True)
            d = [tempfile.mkdtemp(), tempfile.mkdtemp()]
            print(path, "warmer", *run(path, warm=True, dirs=d), flush=True)
            print(path, "after-warmer", *run(path, dirs=d), flush=True)
            d = [tempfile.mkdtemp(), tempfile.mkdtemp()]
            print(path, "threads1", *run(path, env_extra={"TORCHINDUCTOR_COMPILE_THREADS": "1"}, dirs=d), flush=True)
