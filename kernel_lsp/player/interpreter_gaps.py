"""Where Triton's CPU interpreter rejects code the compiler accepts: closed here where that is faithful, named where
it is not. Worker only.

Measured on Triton 3.9 with kernels that compile for sm_90; each of these failed under the interpreter and was
reported as the implementation failing (KL209):
- a parameter annotated with the string "tl.constexpr": the interpreter compiles the kernel's source under
  interpreter.py's `from __future__ import annotations`, so the annotation reads "'tl.constexpr'" and the argument
  is passed as a tensor (`tl.arange` then raises). The compiler's rule ("constexpr" in the annotation) decides here.
- a grid callable that returns a list (the compiler indexes it; the interpreter adds a tuple to it).
- a comparison's handle keeps its left operand's dtype (int32), so `(pid < 4) & (offs < n)` splats the scalar as
  int32 and the mask is rejected ("mask has unsupported dtype"). Comparisons are int1, as compiled.
- `tl.extra.cuda.libdevice` (and `tl.extra.libdevice`) calls: the interpreter has no extern functions. The
  elementwise ones in LIBDEVICE are computed with numpy in float64 and rounded to the result's dtype (libdevice is
  within a few ulps of that); any other stays a limit.

And where it runs but computes other numbers than the GPU (`_float_gaps`; before, kernel-lsp did not judge the
values of such kernels on the CPU, which a wrong kernel could claim by naming a bf16 or fp8 argument it never used):
- `tl.dot` of bf16 operands multiplies their raw bits as integers (bf16 is stored as uint16; triton#11584): garbage.
  The operands are widened to fp32 exactly and multiplied there, accumulating in fp32 as the GPU's tensor cores do.
- fp32 -> bf16 casts truncate (the GPU rounds to nearest even: 1967 of 4019 random values differed by an ulp).
- bf16 arithmetic (an add, a max, exp) computes on the raw bits, and integer or float64 -> bf16 casts write the
  values' bits as they are: computed in fp32 and rounded to bf16 instead.
- fp32 -> fp8 casts drop the mantissa's carry (7.9 became 4.0) and break ties away from even. bf16, fp8e4nv and
  fp8e5 are converted by PyTorch's round-to-nearest-even instead, fp8 saturating at its largest finite value as the
  GPU's `cvt.rn.satfinite` does (NaN kept). Round-toward-zero casts and the other fp8 formats keep the interpreter's
  own conversion.

What remains (inline assembly, other extern functions) raises NotImplementedError inside the interpreter:
`interpreter_limit` tells such a failure from the kernel's own, so the verifier says "cannot be verified on the
CPU" (KL210) instead of blaming the kernel.
"""

from __future__ import annotations

import ast
import math

_installed = False


def _np():
    import numpy as np
    return np


def _erf(x):
    np = _np()
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _round_half_away(x):
    np = _np()
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# libdevice name (without __nv_ and the float suffix) -> numpy function of float64 arrays.
def _table() -> dict:
    np = _np()
    unary = {
        "abs": np.abs, "fabs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
        "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil,
        "cos": np.cos, "cosh": np.cosh, "erf": _erf, "erfc": lambda x: 1.0 - _erf(x), "exp": np.exp,
        "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "floor": np.floor,
        "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "rint": np.rint,
        "nearbyint": np.rint, "round": _round_half_away, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin,
        "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
        "rcp": lambda x: 1.0 / x, "frcp_rn": lambda x: 1.0 / x, "fsqrt_rn": np.sqrt, "isnan": np.isnan,
        "isinf": np.isinf, "signbit": np.signbit, "finitef": np.isfinite, "isfinited": np.isfinite,
        "saturatef": lambda x: np.clip(x, 0.0, 1.0),
    }
    binary = {
        "pow": np.power, "powi": np.power, "atan2": np.arctan2, "fmod": np.fmod, "fmin": np.fmin,
        "fmax": np.fmax, "hypot": np.hypot, "copysign": np.copysign, "fdim": lambda a, b: np.maximum(a - b, 0.0),
        "remainder": lambda a, b: a - np.rint(a / b) * b, "div_rn": np.divide, "div_rz": np.divide,
        "div_rd": np.divide, "div_ru": np.divide, "fdiv_rn": np.divide, "fast_dividef": np.divide,
        "mul_rn": np.multiply, "add_rn": np.add, "sub_rn": np.subtract, "dmul_rn": np.multiply,
        "dadd_rn": np.add, "fmul_rn": np.multiply, "fadd_rn": np.add, "ldexp": np.ldexp,
    }
    table = {name: (1, fn) for name, fn in unary.items()} | {name: (2, fn) for name, fn in binary.items()}
    table["fma"] = (3, lambda a, b, c: a * b + c)
    table["fma_rn"] = table["fma"]
    return table


LIBDEVICE: dict = {}


def _function(symbol: str):
    """The table entry for a libdevice symbol (`__nv_tanhf`, `__nv_fast_expf`, `__nv_erf`), or None."""
    if not LIBDEVICE:
        LIBDEVICE.update(_table())
    name = symbol.removeprefix("__nv_")
    for candidate in (name, name.removeprefix("fast_"), name[:-1], name.removeprefix("fast_")[:-1]):
        if candidate in LIBDEVICE:
            return LIBDEVICE[candidate]
    return None


def _constexpr_params(fn) -> list[str]:
    """The parameters the compiler treats as constexpr: "constexpr" in the annotation, read as the source spells
    it (an annotation stringified twice, "'tl.constexpr'", is unquoted first)."""
    import inspect

    from triton.runtime.jit import _normalize_ty
    out = []
    for name, ann in inspect.get_annotations(fn).items():
        if isinstance(ann, str):
            try:
                inner = ast.literal_eval(ann)
                ann = inner if isinstance(inner, str) else ann
            except (ValueError, SyntaxError):
                pass
        try:
            if "constexpr" in _normalize_ty(ann):
                out.append(name)
        except Exception:
            continue
    return out


def close_gaps() -> bool:
    """Patch the interpreter once per process; False where this Triton lacks a hook (then nothing is patched)."""
    global _installed
    if _installed:
        return True
    try:
        import numpy as np
        import triton.language as tl
        import triton.runtime.interpreter as interp
        builder = interp.interpreter_builder
        executor = interp.GridExecutor
        patch_lang = interp._patch_lang
        handle_type = interp.TensorHandle
        to_np = interp._get_np_dtype
        from triton.language.extra import libdevice as neutral  # stubs the compiler resolves per backend
        from triton.language.extra.cuda import libdevice as cuda
    except (ImportError, AttributeError):
        return False

    original_init = executor.__init__

    def init(self, fn, arg_names, grid, *args, **kwargs):
        original_init(self, fn, arg_names, grid, *args, **kwargs)
        self.constexprs = sorted(set(self.constexprs) | set(_constexpr_params(fn)), key=arg_names.index)
        if callable(grid):
            self.grid = lambda meta, _grid=grid: tuple(_grid(meta))
        elif isinstance(grid, list):
            self.grid = tuple(grid)

    executor.__init__ = init

    for name in dir(builder):
        if name.startswith(("create_icmp", "create_fcmp")):
            def compare(*args, _original=getattr(builder, name), **kwargs):
                out = _original(*args, **kwargs)
                return handle_type(out.data.astype(bool), tl.int1)
            setattr(builder, name, compare)

    def extern(lib_name, lib_path, symbol, args, ret_type, is_pure):
        entry = _function(symbol)
        if entry is None or entry[0] != len(args):
            raise NotImplementedError(f"libdevice {symbol.removeprefix('__nv_')} has no CPU implementation in "
                                      "Triton's interpreter")
        with np.errstate(all="ignore"):
            out = entry[1](*[a.data.astype(np.float64) for a in args])
        scalar = getattr(ret_type, "scalar", ret_type)
        return handle_type(np.asarray(out).astype(to_np(scalar)), scalar)

    builder.create_extern_elementwise = extern

    def patched_lang(fn):
        scope = patch_lang(fn)
        builtins = {name: member for name, member in vars(cuda).items() if tl.core.is_builtin(member)}
        for module in (cuda, neutral):
            for name, member in builtins.items():
                scope.set_attr(module, name, lambda *a, _m=member, **k: _m(
                    *a, **{key: v for key, v in k.items() if key != "_semantic"},
                    _semantic=interp.interpreter_semantic))
        return scope

    interp._patch_lang = patched_lang
    _float_gaps(builder, handle_type, tl, interp)
    if callable(getattr(interp, "_patch_builtin", None)) and callable(getattr(interp, "_patch_attr", None)):
        interp._patch_builtin = _cached_patch_builtin(interp, tl)
    _installed = True
    return True


def _float_gaps(builder, handle_type, tl, interp) -> None:
    """Casts to and from bf16, fp8e4nv and fp8e5 as the GPU rounds them, and bf16 `tl.dot` in fp32 (the module
    docstring says what the interpreter does instead)."""
    import torch
    np = _np()
    torch_of = {tl.bfloat16: torch.bfloat16, tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}
    bits_of = {tl.bfloat16: torch.int16, tl.float8e4nv: torch.uint8, tl.float8e5: torch.uint8}
    largest = {tl.float8e4nv: 448.0, tl.float8e5: 57344.0}  # satfinite: larger magnitudes (and inf) saturate
    exact = (tl.float32, tl.float16, *torch_of)  # formats whose every value fp32 holds exactly
    rtne = interp._ir.ROUNDING_MODE.RTNE

    def widened(h):
        """The handle's values as a float32 array of its shape (exact), or None for a format not handled here."""
        scalar, data = h.dtype.scalar, np.asarray(h.data)
        if scalar in torch_of:
            wide = torch.from_numpy(np.ascontiguousarray(data)).view(torch_of[scalar]).float().numpy()
            return wide.reshape(data.shape)  # (ascontiguousarray makes a 0-d array 1-d)
        if scalar in (tl.float32, tl.float16):
            return data.astype(np.float32)
        return None

    def narrowed(values, dst):
        """float32 (or float64) values in `dst` (one of torch_of), rounded to nearest even, as the interpreter stores
        them, in the values' shape."""
        values = np.asarray(values)
        t = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64 if values.dtype == np.float64
                                                  else np.float32))
        if dst in largest:
            t = t.clamp(-largest[dst], largest[dst])  # NaN stays NaN
        out = t.to(torch_of[dst]).view(bits_of[dst]).numpy()
        return out.view(interp._get_np_dtype(dst)).reshape(values.shape)

    def as_fp32(h):
        return handle_type(widened(h), tl.float32) if h.dtype.scalar == tl.bfloat16 else h

    def as_bf16(h):
        return handle_type(narrowed(np.asarray(h.data), tl.bfloat16), tl.bfloat16)

    def converted(src, dst_type, original, *rest):
        dst = dst_type.scalar
        if dst in torch_of and (src.dtype.scalar == tl.float64 or src.dtype.scalar.is_int()):
            # integers (int8 weights dequantized to bf16) and float64: the interpreter wrote their values' raw bits
            return handle_type(narrowed(np.asarray(src.data).astype(np.float64), dst), dst)
        if src.dtype.scalar != dst and src.dtype.scalar in exact and dst in exact and (
                src.dtype.scalar in torch_of or dst in torch_of):
            values = widened(src)
            if dst in torch_of:
                return handle_type(narrowed(values, dst), dst)
            return handle_type(values.astype(interp._get_np_dtype(dst)), dst)  # fp32, or fp16 (numpy rounds to even)
        return original(src, dst_type, *rest)

    cast, fp_to_fp, dot = builder.cast_impl, builder.create_fp_to_fp, builder.create_dot

    def create_fp_to_fp(src, dst_type, rounding_mode):
        if rounding_mode is None or rounding_mode == rtne:
            return converted(src, dst_type, fp_to_fp, rounding_mode)
        return fp_to_fp(src, dst_type, rounding_mode)

    def create_dot(a, b, d, *rest, **kwargs):
        # bf16 operands only: the accumulator is fp32 (Triton refuses a bf16 out_dtype), and so is the result
        return dot(as_fp32(a), as_fp32(b), d, *rest, **kwargs)

    builder.cast_impl, builder.create_fp_to_fp, builder.create_dot = (
        lambda src, dst_type: converted(src, dst_type, cast), create_fp_to_fp, create_dot)

    def is_bf16(h) -> bool:
        return isinstance(h, handle_type) and h.dtype.scalar == tl.bfloat16

    def in_fp32(original):
        """bf16 arithmetic computed in fp32 and rounded back to bf16 (the interpreter computed on the raw bits)."""
        def wrapped(*args, **kwargs):
            if not any(is_bf16(a) for a in args):
                return original(*args, **kwargs)
            out = original(*[as_fp32(a) if is_bf16(a) else a for a in args], **kwargs)
            if isinstance(out, handle_type) and out.dtype.scalar == tl.float32:
                return as_bf16(out)
            return out  # a comparison's int1
        return wrapped

    for name in dir(builder):
        if name in BF16_MATH or name.startswith("create_fcmp"):
            setattr(builder, name, in_fp32(getattr(builder, name)))
    extern = builder.create_extern_elementwise

    def create_extern_elementwise(lib_name, lib_path, symbol, args, ret_type, is_pure):
        if not any(is_bf16(a) for a in args):
            return extern(lib_name, lib_path, symbol, args, ret_type, is_pure)
        out = extern(lib_name, lib_path, symbol, [as_fp32(a) for a in args], tl.float32, is_pure)
        return as_bf16(out) if getattr(ret_type, "scalar", ret_type) == tl.bfloat16 else out

    builder.create_extern_elementwise = create_extern_elementwise


# The interpreter's float arithmetic, which on bf16 operands computes on their raw bits (uint16): wrapped by
# _float_gaps to compute in fp32 and round back (with every create_fcmp*).
BF16_MATH = frozenset({
    "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem", "create_fma", "create_fneg",
    "create_fabs", "create_approx_divf", "create_precise_divf", "create_precise_sqrt", "create_sqrt", "create_rsqrt",
    "create_exp", "create_exp2", "create_log", "create_log2", "create_cos", "create_sin", "create_erf",
    "create_floor", "create_ceil", "create_clampf", "create_maximumf", "create_maxnumf", "create_minimumf",
    "create_minnumf"})


def _cached_patch_builtin(interp, tl):
    """Triton's `_patch_builtin(pkg, builder, ...)` without `inspect.getmembers` on every call. The interpreter
    patches triton.language for each launch and again for each call of a nested @jit function (`tl.max`, `tl.sum`,
    `tl.cdiv` are such functions), and listing the members of tl, tl.tensor and tl.math took 40% of a row softmax's
    verification. The names of the builtins are listed once, at the first call (a launch from unpatched modules);
    each call then patches those names whose current member is a builtin, which is what the original does (a member
    it patched before is a wrapper, not a builtin, and is skipped by both)."""
    import inspect
    names_of: dict = {}

    def patch_builtin(pkg, builder, *rest):
        names = names_of.get(pkg)
        if names is None:
            names = names_of[pkg] = tuple(name for name, member in inspect.getmembers(pkg)
                                          if tl.core.is_builtin(member))
        for name in names:
            member = getattr(pkg, name, None)
            if tl.core.is_builtin(member):
                interp._patch_attr(pkg, name, member, builder, *rest)
    return patch_builtin


def interpreter_limit(exc: BaseException) -> str | None:
    """The interpreter's own limit behind an exception (NotImplementedError raised inside Triton's interpreter, as
    for inline assembly or an extern function it lacks), in its words; None for any other failure."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, NotImplementedError):
            tb, inside = exc.__traceback__, False
            while tb is not None:
                name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
                inside = inside or name.endswith(("triton/runtime/interpreter.py", "player/interpreter_gaps.py"))
                tb = tb.tb_next
            if inside:
                return str(exc) or type(exc).__name__
        exc = exc.__cause__ or exc.__context__
    return None
