"""The launch recorder (kernel_lsp/engine/capture.py)."""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent('''
    import gc, os, weakref
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from kernel_lsp.engine.capture import LaunchRecorder

    @triton.jit
    def _fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0, mask=offs < n)

    recorder, seen = LaunchRecorder(), []
    recorder.on_launch.append(lambda launch, tensors: seen.append([tuple(t.shape) for t in tensors]))
    recorder.install()
    out = torch.empty(100)
    _fill[(1,)](out, 100, BLOCK=128)
    alive = weakref.ref(out)
    del out
    gc.collect()
    recorder.uninstall()
    print(len(recorder.launches), seen, alive() is None)
''')


def test_the_recorder_hands_tensors_to_its_hooks_and_keeps_none_alive():
    """Every launch of every variant used to keep its tensors alive until the check ended (on a GPU, gigabytes
    at the problem's own sizes)."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "[[(100,)]]", "True"], proc.stdout
