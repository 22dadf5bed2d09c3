from kernel_lsp.source.discover import discover_source, has_triton_kernels


def test_discover_stacked_decorators_and_nesting():
    src = '''
import triton
import triton.language as tl
from triton import jit as tjit


@triton.autotune(configs=[triton.Config({"B": 32})], key=["n"])
@triton.heuristics({"EVEN": lambda a: a["n"] % 32 == 0})
@triton.jit
def tuned(x, n, B: tl.constexpr, EVEN: tl.constexpr):
    pass


class Ops:
    @staticmethod
    @triton.jit
    def in_class(x):
        pass


def factory():
    @tjit
    def nested(x):
        helper(x)
    return nested


@triton.jit
def helper(x):
    pass


def launch(x):
    tuned[(1,)](x, 4)
    Ops.in_class[(2,)](x)
'''
    found = discover_source(src)
    lines = src.splitlines()
    line_of = lambda text: next(i for i, ln in enumerate(lines) if text in ln)  # noqa: E731
    names = {k.qualname: k for k in found.kernels}
    assert set(names) == {"tuned", "Ops.in_class", "factory.nested", "helper"}
    tuned = names["tuned"]
    assert tuned.def_span.line == line_of("def tuned")
    assert tuned.name_span.col == 4 and tuned.decorators[0] == "triton.autotune"
    assert [s.span.line for s in tuned.launches] == [line_of("tuned[(1,)]")]
    assert [s.span.line for s in names["Ops.in_class"].launches] == [line_of("Ops.in_class[(2,)]")]
    assert names["helper"].is_helper and not tuned.is_helper


def test_discover_a_combine_function_passed_to_reduce_or_scan_is_a_helper():
    src = '''
import triton
import triton.language as tl


@triton.jit
def _pair_max(a, ia, b, ib):
    return tl.maximum(a, b), tl.where(a >= b, ia, ib)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def kernel(x_ptr, out_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    m, i = tl.reduce((x, tl.arange(0, B)), 0, _pair_max)
    s = tl.associative_scan(x, 0, combine_fn=_add)
    tl.store(out_ptr, m + i + tl.sum(s))


def launch(x, out):
    kernel[(1,)](x, out, B=16)
'''
    names = {k.qualname: k for k in discover_source(src).kernels}
    assert names["_pair_max"].is_helper and names["_add"].is_helper and not names["kernel"].is_helper


def test_discover_a_launched_kernel_named_inside_another_is_no_helper():
    """A helper is left out of the verdict and of KL104 ("not verified"): a launched kernel that another kernel
    names (as an argument of any call but a combine function's place, or even calls in a dead branch) must stay a
    kernel, or a wrong kernel on a path the verification never takes would pass unmentioned."""
    src = '''
import triton
import triton.language as tl


@triton.jit
def _wide(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def _narrow(x_ptr, n, BLOCK: tl.constexpr, DEBUG: tl.constexpr = False):
    if DEBUG:
        tl.static_print("variant", _wide)
        _wide(x_ptr, n, BLOCK)
    s = tl.reduce(tl.arange(0, BLOCK), 0, _wide)


def launch(x, n):
    if n >= 1 << 24:
        _wide[(1,)](x, n, BLOCK=4096)
    else:
        _narrow[(1,)](x, n, BLOCK=1024)
'''
    names = {k.qualname: k for k in discover_source(src).kernels}
    assert not names["_wide"].is_helper and not names["_narrow"].is_helper


def test_discover_syntax_error_is_reported_not_raised():
    found = discover_source("import triton\n@triton.jit\ndef k(x:\n    pass\n")
    assert found.kernels == [] and found.syntax_error is not None and found.syntax_error.lineno == 3


def test_discover_no_kernels_and_plain_python():
    assert discover_source("def f():\n    return 1\n").kernels == []
    assert not has_triton_kernels("import numpy\n")
    assert not has_triton_kernels("import triton  # but no kernels\n")


def test_discover_ignores_other_jit_decorators():
    src = "import numba\n@numba.jit\ndef f(x):\n    return x\n"
    assert discover_source(src).kernels == []


def test_discover_a_file_without_jit_is_parsed_and_not_walked(monkeypatch):
    """A file that never says `jit` has no kernel: its syntax is still checked, the two walks are skipped (a 10 MB
    file of plain Python spent a minute in them)."""
    from kernel_lsp.source import discover

    def walked(*args):
        raise AssertionError("walked a file without jit")
    monkeypatch.setattr(discover, "_triton_aliases", walked)
    assert discover.discover_source("import triton\n" + "x = 1\n" * 3).kernels == []
    assert discover.discover_source("import triton\ndef f(:\n").syntax_error is not None
    monkeypatch.undo()
    assert [k.name for k in discover.discover_source("import triton\n@triton.jit\ndef k(x):\n    pass\n").kernels] \
        == ["k"]
