"""The launch recorder (kernel_lsp/checker/compile/capture.py)."""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent('''
    import gc, os, weakref
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from kernel_lsp.player.capture import LaunchRecorder

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


def test_the_compile_stage_compiles_exactly_what_a_launch_compiles():
    """The compile stage's source has the JIT's own cache key (same signature, constants and per-parameter
    attributes, [] included), so on a GPU Triton's cache answers it with the launch's compile. Before, parameters
    without attributes (an odd length, a constexpr) were left out and every config of a `tl.dot` kernel was compiled
    twice (2.3 s each on the H200)."""
    import torch
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    from kernel_lsp.player.capture import build_spec
    from kernel_lsp.player.compiler import ast_source

    @triton.jit
    def copy(X, Y, n, stride, one, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(Y + i * stride, tl.load(X + i * one, mask=i < n), mask=i < n)

    x, y = torch.empty(1000), torch.empty(1000)
    for args in [(x, y, 999, 3, 1), (x, y, 1024, 16, 1), (x[1:], y, 998, 1, 2)]:
        kwargs = {"BLOCK": 128}
        backend = make_backend(GPUTarget("cuda", 90, 32))
        bound, specialization, options = create_function_from_signature(copy.signature, copy.params, backend)(
            *args, **kwargs)
        _, signature, constexprs, attrs = copy._pack_args(backend, kwargs, bound, specialization, options)
        spec, _ = build_spec(copy.fn, "copy", args, kwargs)
        assert ast_source(copy, spec).hash() == ASTSource(copy, signature, constexprs, attrs).hash(), args


GRIDS = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from kernel_lsp.player.capture import LaunchRecorder

    @triton.jit
    def _fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0, mask=offs < n)

    recorder = LaunchRecorder()
    recorder.install()
    recorder.dry = True
    out = torch.empty(1000)
    _fill[(3, 2)](out, 1000, BLOCK=128)
    _fill[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](out, 1000, BLOCK=128)
    _fill[lambda meta: [triton.cdiv(meta["n"], 256)]](out, 1000, BLOCK=128)
    recorder.uninstall()
    print([launch.programs for launch in recorder.launches])
''')


def test_the_recorder_counts_each_launchs_programs_without_running_it():
    """A dry launch (nothing executes) still says how many programs it would run: a grid tuple, or a callable given
    the launch's arguments by name (the block-size planner reads it, kernel_lsp/checker/verify/plan/blocks.py)."""
    proc = subprocess.run([sys.executable, "-c", GRIDS], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[6,", "8,", "4]"], proc.stdout
