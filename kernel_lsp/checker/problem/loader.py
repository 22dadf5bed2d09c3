"""Import user modules and build the two callables the verifier compares, as a `Problem` (problem.py). Runs in a
worker only.

The reference side is imported here and the implementation in the player, each failure a UserCodeError naming its
side (errors.py). KernelBench's own rule is kept: each model is built right after the same `torch.manual_seed`, so
parameters created in `__init__` match.
"""

from __future__ import annotations

import importlib.util
import os
import types
import weakref
from pathlib import Path
from typing import Any, Callable

from ...jobs import LinkSpec
from ...model import split_lines
from ...player.sourcefile import exec_file
from ...player.state import training_modes
from .errors import IMPLEMENTATION, INPUTS, REFERENCE, UserCodeError, deepest_line
from .problem import Problem, manual_seed

_counter = 0


def warm_meta_device() -> None:
    """Import what the meta device needs on first use: torch._refs, torch._prims and sympy for a factory, and
    torch._dynamo for the first op on meta tensors (about 1.6 s on this project's CPU machine, seconds more where
    torch has no .pyc files), so that each job's size plan does not pay it. Called once by each long-lived process
    (the zygote before it forks, the GPU worker before it is ready)."""
    import torch
    try:
        x = torch.randn(2, device="meta")
        (x * 2 + x).sum()
    except Exception:
        pass



def import_path(path: str, tag: str, source: str | None = None) -> types.ModuleType:
    """Import a file as a fresh module (a new name each time, so two imports never share state).

    With `source`, the editor's unsaved text is run instead of the file's bytes; linecache is primed with it
    so that Triton, which reads kernel source through `inspect`, sees the same text.
    """
    global _counter
    _counter += 1
    return exec_file(path, f"_kernel_lsp_{tag}_{_counter}", source, str(Path(path).resolve().parent))


def reference_source(source: str, implementation_names: set[str], roots: set[str]) -> str:
    """The reference side of a file that also holds the implementation: the statements the reference side needs
    (`roots`: the reference, the input factories, the random-op contract), followed through the names they use, and
    nothing of the implementation: no @triton.jit (or autotune, heuristics) function, none of
    `implementation_names` (ModelNew, the linked entry), no `if __name__ == "__main__"` block, and at module level
    only imports, definitions and assignments to plain names. A statement that patches another module (an
    expression statement, an assignment to an attribute or an item) is dropped, and so is an import the reference
    side never names: neither may bend the truth. Dropped lines are left blank, so line numbers stay the file's."""
    import ast
    tree = ast.parse(source)
    candidates: list[tuple[ast.stmt, set[str]]] = []  # (statement, the names it binds)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
            candidates.append((node, {"*"} if "*" in bound else bound))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name not in implementation_names and not any(_is_triton_decorator(d)
                                                                 for d in node.decorator_list):
                candidates.append((node, {node.name}))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for tg in targets for n in (tg.elts if isinstance(tg, (ast.Tuple, ast.List)) else [tg])]
            if all(isinstance(n, ast.Name) and n.id not in implementation_names for n in names):
                candidates.append((node, {n.id for n in names}))
    needed, kept = set(roots), set()
    changed = True
    while changed:
        changed = False
        for i, (node, bound) in enumerate(candidates):
            if i in kept or not (bound & needed or "*" in bound):
                continue
            kept.add(i)
            changed = True
            needed |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            needed |= {n.value.id for n in ast.walk(node) if isinstance(n, ast.Attribute)
                       and isinstance(n.value, ast.Name)}
    lines = split_lines(source, keepends=True)
    keep = [False] * len(lines)
    for i in kept:
        node = candidates[i][0]
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for ln in range(first - 1, node.end_lineno):
            keep[ln] = True
    for node in tree.body:  # a docstring
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for ln in range(node.lineno - 1, node.end_lineno):
                keep[ln] = True
    return "".join(line if k else ("\n" if line.endswith(("\n", "\r")) else "") for line, k in zip(lines, keep))


def _is_triton_decorator(node) -> bool:
    import ast
    text = ast.unparse(node)
    return text.startswith(("triton.jit", "triton.autotune", "triton.heuristics", "jit", "autotune", "heuristics",
                            "tl.", "triton."))



def _size_knobs(module: types.ModuleType, *factories: Callable) -> dict[str, int]:
    """Module-level ints the factories read by name: KernelBench's `batch_size = 16`, `dim = 16384`."""
    names = set()
    for factory in factories:
        code = getattr(factory, "__code__", None)
        names |= set(code.co_names) if code else set()
    return {n: getattr(module, n) for n in sorted(names)
            if isinstance(getattr(module, n, None), int) and not isinstance(getattr(module, n), bool)}


def load_problem(link: LinkSpec, impl_path: str, seed: int, source: str | None = None,
                 device: str = "cpu", player=None, keep: set[str] = frozenset()) -> Problem:
    """Import the reference side here and the implementation in the player (checker/player.py), and build the
    callables; raises UserCodeError naming which side failed. Without a player, the reference side alone (the
    implementation's callables are None). A module of the reference side that is the implementation's own file is
    imported as `reference_source` of it: the implementation's code never runs in this process."""
    ref, inputs_mod = _import_reference_side(link, impl_path, source, keep)
    ref_path = link.reference
    inputs_path = link.inputs_path or ref_path
    if player is not None:
        try:
            player.load(impl_path, source, knob_files=sorted({os.path.realpath(inputs_path),
                                                              os.path.realpath(ref_path)}))
        except BaseException as e:
            raise UserCodeError("the implementation failed to import", e, impl_path, IMPLEMENTATION) from e
    implementation = _implementation_builder(link, impl_path, seed, player)
    if link.kind == "kernelbench":
        return _kernelbench_problem(ref, ref_path, seed, device, implementation)
    return _linked_problem(link, ref, inputs_mod, seed, device, player, implementation)


def _import_reference_side(link: LinkSpec, impl_path: str, source: str | None,
                           keep: set[str]) -> tuple[types.ModuleType, types.ModuleType]:
    """Import the reference's module and the input factory's (one module when they are one file); raises
    UserCodeError naming the one that failed. A module that is the implementation's own file is imported as
    `reference_source` of it, which keeps the reference's names and the ones in `keep`."""
    impl_real = os.path.realpath(impl_path)
    names = {link.entry, "ModelNew"} if link.kind == "kernelbench" else {link.entry}
    roots = (({"Model", "get_inputs", "get_init_inputs"} if link.kind == "kernelbench"
              else {link.reference_name, link.inputs_name})
             | {"KERNEL_LSP_RANDOM", "kernel_lsp_check_sample"} | set(keep))
    modules: dict[str, types.ModuleType] = {}

    def side(path: str, tag: str, text: str | None, what: str, who: str) -> types.ModuleType:
        real = os.path.realpath(path)
        if real not in modules:
            try:
                if real == impl_real:
                    # The file as Python reads it: its declared encoding (PEP 263), UTF-8 by default.
                    whole = source if source is not None else importlib.util.decode_source(Path(path).read_bytes())
                    modules[real] = import_path(path, tag, reference_source(whole, names, roots))
                else:
                    modules[real] = import_path(path, tag, text)
            except BaseException as e:
                raise UserCodeError(f"the {what} failed to import", e, path, who) from e
        return modules[real]

    ref_path = link.reference
    ref = side(ref_path, "ref", link.reference_text, "reference", REFERENCE)
    inputs_path = link.inputs_path or ref_path
    inputs_mod = side(inputs_path, "inputs", link.inputs_text, "input factory", INPUTS)
    return ref, inputs_mod


def _implementation_builder(link: LinkSpec, impl_path: str, seed: int, player) -> Callable:
    """The function that builds the implementation's callable in the player, for the given init inputs and size
    knobs, or another version of it from its text; it gives None without a player and raises UserCodeError
    saying what could not be built."""
    def implementation(init: list | None, knobs: dict | None, other: str | None = None):
        if player is None:
            return None
        try:
            return player.build(link.kind, "ModelNew" if link.kind == "kernelbench" else link.entry, seed,
                                 init if link.kind == "kernelbench" else None, knobs, other)
        except BaseException as e:
            if other is not None:
                raise UserCodeError("the other version could not be built", e, impl_path, IMPLEMENTATION) from e
            if link.kind != "kernelbench" and type(e).__name__ == "AttributeError":
                raise UserCodeError(f"the linked implementation name {link.entry!r} is missing", e, None,
                                    IMPLEMENTATION) from e
            raise UserCodeError("ModelNew could not be built" if link.kind == "kernelbench" else
                                "the implementation could not be built", e, impl_path, IMPLEMENTATION) from e
    return implementation


def _kernelbench_problem(ref: types.ModuleType, ref_path: str, seed: int, device: str,
                         implementation: Callable) -> Problem:
    """The Problem of a KernelBench pair: Model and ModelNew each built right after the same seed, from
    get_init_inputs. It is built once here, so a broken model is reported as a load failure."""
    import torch
    trains: dict[str, bool] = {}
    as_built: dict[int, list[bool]] = {}  # id of a reference model -> its modules' training flags as built

    def build(knobs: dict[str, int], init: list | None) -> tuple[Callable, Callable]:
        try:
            init = list(ref.get_init_inputs()) if init is None else init
            manual_seed(seed)
            ref_model = ref.Model(*init)
        except BaseException as e:
            err = UserCodeError("the reference Model could not be built", e, ref_path, REFERENCE)
            err.args = (str(err) + _arity_note(ref, init, e, ref_path),)
            raise err from e
        if isinstance(ref_model, torch.nn.Module):
            # Whether the problem leaves its normalizations in training mode (PyTorch's default) or sets them to
            # eval itself, as built: the verifier tries training mode only in the first case.
            trains["norms"] = trains.get("norms", False) or any(m.training for m in _norms(ref_model))
            trains["drops"] = trains.get("drops", False) or any(m.training for m in _dropouts(ref_model))
            trains["code"] = trains.get("code", False) or _reads_training(ref_model)
            as_built[id(ref_model)] = training_modes(ref_model)
            ref_model.eval().to(device)
        return ref_model, implementation(init, knobs)

    def build_other(text: str) -> Callable:
        return implementation(list(ref.get_init_inputs()), None, text)

    problem = Problem(build, ref.get_inputs, ref, _size_knobs(ref, ref.get_inputs, ref.get_init_inputs),
                      lambda init: ref.Model(*(ref.get_init_inputs() if init is None else init)), device,
                      init_inputs=ref.get_init_inputs, build_other=build_other, seed=seed,
                      **_random_contract(ref))
    problem.callables()  # build once now, so a broken model is reported as a load failure
    problem.trains = trains.get("norms", False)
    problem.drops = trains.get("drops", False)
    problem.trains_in_code = trains.get("code", False)
    problem.as_built = as_built
    return problem


def _linked_problem(link: LinkSpec, ref: types.ModuleType, inputs_mod: types.ModuleType, seed: int, device: str,
                    player, implementation: Callable) -> Problem:
    """The Problem of a linked pair: the reference and input factory found by their linked names (UserCodeError
    when one is missing). With a player, its callables are built once here."""
    named = {}
    for who, module, name in ((REFERENCE, ref, link.reference_name), (INPUTS, inputs_mod, link.inputs_name)):
        try:
            named[who] = getattr(module, name)
        except AttributeError as e:
            raise UserCodeError(f"the linked {who} name {name!r} is missing", e, None, who) from e
    reference, factory = named[REFERENCE], named[INPUTS]
    problem = Problem(lambda knobs, init: (reference, implementation(None, knobs)), factory, inputs_mod,
                      _size_knobs(inputs_mod, factory), lambda init: reference, device, **_random_contract(ref),
                      build_other=lambda text: implementation(None, None, text), seed=seed)
    if player is not None:
        problem.callables()
    return problem


def _norms(model) -> list:
    """The submodules that compute otherwise in training mode, deterministically: batch norms (batch statistics
    instead of the running ones) and instance norms that keep running statistics (dropout draws: a random op's)."""
    import torch
    bn, inorm = torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm
    return [m for m in model.modules() if isinstance(m, bn) or (isinstance(m, inorm) and m.track_running_stats)]


def _dropouts(model) -> list:
    """The submodules that draw random numbers in training mode and pass their input through in eval mode: dropout
    of every kind (nn.Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout) with a probability above zero."""
    import torch
    return [m for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]


def _reads_training(model) -> bool:
    """Whether the code of a class of the model's, other than torch's own (the user's, a library's), reads
    `self.training` while the model is in training mode as built: `F.dropout(x, p, self.training)`,
    `F.batch_norm(..., training=self.training)`, `if self.training:`. The train-mode variant then runs; whether the
    reference draws there (and is judged as a random op) is seen when it is called (runs.VariantRuns). Base classes
    are read too; a class whose source cannot be read counts as not reading it."""
    seen: set[type] = set()
    for m in model.modules():
        if not m.training:
            continue
        for cls in type(m).__mro__:
            if cls in seen or cls is object or cls.__module__.split(".")[0] == "torch":
                continue
            seen.add(cls)
            if _class_reads_training(cls):
                return True
    return False


_reads_by_class: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()


def _class_reads_training(cls: type) -> bool:
    """Whether the class's own source names `self.training`; once per class object (the problem is built again for
    every size, and inspect reads and parses the class's whole module each time)."""
    import ast
    import inspect
    import textwrap
    if cls not in _reads_by_class:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
            reads = any(isinstance(n, ast.Attribute) and n.attr == "training" and isinstance(n.value, ast.Name)
                        and n.value.id == "self" for n in ast.walk(tree))
        except Exception:  # no source (built in, generated, a notebook's), or none that parses alone
            reads = False
        _reads_by_class[cls] = reads
    return _reads_by_class[cls]


def _first_line(fn) -> int | None:
    """The 0-based line where a Python function is defined, if it is one."""
    code = getattr(fn, "__code__", None)
    return code.co_firstlineno - 1 if code is not None else None


def _arity_note(ref: types.ModuleType, init, exc: BaseException, ref_path: str) -> str:
    """When Model(*get_init_inputs()) fails on the number of arguments (a TypeError raised by the call itself, so no
    frame of the reference's file says where), where the two sides of the mismatch are: `get_init_inputs`
    (problem.py:19) gives 1 value; Model.__init__ (problem.py:8) takes 0."""
    import inspect
    if not isinstance(exc, TypeError) or init is None or deepest_line(exc, ref_path) is not None:
        return ""
    name = Path(ref_path).name
    where = _first_line(getattr(ref, "get_init_inputs", None))
    gives = f"get_init_inputs ({name}:{where + 1})" if where is not None else "get_init_inputs"
    note = f"; {gives} gives {len(init)} value{'' if len(init) == 1 else 's'}"
    init_fn = getattr(getattr(ref, "Model", None), "__init__", None)
    try:
        params = [p for p in list(inspect.signature(init_fn).parameters.values())[1:]
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        code = getattr(init_fn, "__code__", None)
        if code is not None and Path(code.co_filename).resolve() == Path(ref_path).resolve():
            note += f", Model.__init__ ({name}:{code.co_firstlineno}) takes {len(params)}"
        else:
            note += f", Model takes {len(params)}"
    except (TypeError, ValueError):
        pass
    return note


def _random_contract(ref: types.ModuleType) -> dict[str, Any]:
    """`KERNEL_LSP_RANDOM = True` in the reference's module marks a random op (docs/verification.md); an optional
    `kernel_lsp_check_sample(inputs, output)` there returns a message when one sample breaks an invariant."""
    return {"random": bool(getattr(ref, "KERNEL_LSP_RANDOM", False)),
            "sample_check": getattr(ref, "kernel_lsp_check_sample", None)}
